/*
 * scaler/disrupt/candidates.c — the disruption state: per NodeClaim, its node,
 * pods, price, costs and the candidate rules (kubernetes-sigs/karpenter
 * pkg/controllers/disruption/types.go NewCandidate); per NodePool, consolidation settings
 * and budgets (pkg/apis/v1/nodepool.go). Pure (see disrupt.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/strs.h"
#include "api/wellknown.h"
#include "api/duration.h"
#include "common/clock.h"
#include "scaler/disrupt/disrupt.h"

static const char *md_label(const nw_node_meta_t *m, const char *k)
{
    return nw_node_meta_label(m, k);
}

static bool cond_true(const nw_node_meta_t *m, const char *type)
{
    return nw_node_meta_condition_status(m, type) == NW_NODE_COND_TRUE;
}

/* a condition's lastTransitionTime, 0 when it has none (or it does not parse) */
static int64_t cond_time(const nw_node_meta_t *m, const char *type)
{
    const nw_node_cond_t *c = nw_node_meta_condition(m, type);
    return c ? c->since : 0;
}

static bool pod_terminal(const nw_pod_t *pod)
{
    return nw_pod_is_terminal(pod);
}

static bool pod_terminating(const nw_pod_t *pod)
{
    return pod->terminating;
}

static bool pod_mirror(const nw_pod_t *pod)
{
    return nw_pod_annotation(pod, "kubernetes.io/config.mirror") != NULL ||
           nw_pod_owned_by(pod, "Node");
}

static bool pod_active(const nw_pod_t *pod)
{
    return !pod_terminal(pod) && !pod_terminating(pod);
}

bool nw_candidates_pod_reschedulable(const nw_pod_t *pod)
{
    return (pod_active(pod) ||
            (nw_pod_owned_by(pod, "StatefulSet") && pod_terminating(pod) && !pod_terminal(pod))) &&
           !nw_pod_owned_by(pod, "DaemonSet") && !pod_mirror(pod);
}

double nw_candidates_eviction_cost(const nw_pod_t *pod)
{
    double cost = 1.0;
    const char *dc = nw_pod_annotation(pod, "controller.kubernetes.io/pod-deletion-cost");
    if (dc) {
        char *end = NULL;
        double v = strtod(dc, &end);
        if (end && end != dc && *end == 0 && isfinite(v))
            cost += v / 134217728.0; /* 2^27 */
    }
    if (pod->has_priority)
        cost += (double)pod->priority / 33554432.0; /* 2^25 */
    return cost < -10 ? -10 : cost > 10 ? 10 : cost;
}

bool nw_candidates_pod_do_not_disrupt(const nw_pod_t *pod, int64_t now)
{
    const char *v = nw_pod_annotation(pod, NW_DIS_DND);
    if (!v)
        return false;
    if (strcmp(v, "true") == 0)
        return true;
    int64_t d = 0;
    if (nw_duration_parse(v, &d, NULL) != NW_OK || d <= 0)
        return false; /* invalid values are ignored */
    if (!pod->started)
        return true; /* not started yet: the duration has not begun to run */
    return now - pod->started < d;
}

static bool tolerates_disrupted(const nw_pod_t *pod)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(pod->spec, "tolerations"))
    {
        const char *k = nw_json_str(t, "key"), *op = nw_json_str(t, "operator"),
                   *e = nw_json_str(t, "effect");
        const char *v = nw_json_str(t, "value");
        if (e && *e && strcmp(e, "NoSchedule") != 0)
            continue;
        if (op && strcmp(op, "Exists") == 0) {
            if (!k || !*k || strcmp(k, NW_TAINT_DISRUPTED) == 0)
                return true;
        } else if (k && strcmp(k, NW_TAINT_DISRUPTED) == 0 && (!v || !*v)) {
            return true;
        }
    }
    return false;
}

static bool pod_ready_false(const nw_pod_t *pod)
{
    const nw_pod_cond_t *c = nw_pod_condition(pod, "Ready");
    return c && c->status == NW_POD_COND_FALSE;
}

bool nw_candidates_selector_matches(const cJSON *sel, const cJSON *labels)
{
    if (!cJSON_IsObject(sel))
        return false;
    const cJSON *l;
    cJSON_ArrayForEach(l, nw_json_get(sel, "matchLabels"))
    {
        const char *v = nw_json_str(labels, l->string);
        if (!v || !cJSON_IsString(l) || strcmp(v, l->valuestring) != 0)
            return false;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, nw_json_get(sel, "matchExpressions"))
    {
        const char *k = nw_json_str(e, "key"), *op = nw_json_str(e, "operator");
        if (!k || !op)
            return false;
        const char *v = nw_json_str(labels, k);
        bool in = false;
        const cJSON *x;
        cJSON_ArrayForEach(x, nw_json_get(e, "values"))
        {
            if (v && cJSON_IsString(x) && strcmp(x->valuestring, v) == 0)
                in = true;
        }
        if (strcmp(op, "In") == 0) {
            if (!in)
                return false;
        } else if (strcmp(op, "NotIn") == 0) {
            if (in)
                return false;
        } else if (strcmp(op, "Exists") == 0) {
            if (!v)
                return false;
        } else if (strcmp(op, "DoesNotExist") == 0) {
            if (v)
                return false;
        } else {
            return false;
        }
    }
    return true;
}

/* ---- pools ---- */

static const cJSON *pool_disruption(const cJSON *pool)
{
    return nw_json_get(nw_json_get(pool, "spec"), "disruption");
}

static void pool_settings(nw_disrupt_pool_t *p)
{
    const cJSON *d = pool_disruption(p->obj);
    const char *after = nw_json_str(d, "consolidateAfter");
    const char *pol = nw_json_str(d, "consolidationPolicy");
    p->when_empty = pol && strcmp(pol, "WhenEmpty") == 0;
    p->balanced = pol && strcmp(pol, "Balanced") == 0;
    p->consolidate_after = 0;
    p->consolidation_never = false;
    const cJSON *rep = nw_json_get(nw_json_get(p->obj, "spec"), "replicas");
    if (cJSON_IsNumber(rep))
        p->consolidation_never = true; /* a static NodePool: held at replicas, never consolidated */
    else if (after && strcmp(after, "Never") == 0)
        p->consolidation_never = true;
    else if (after && (nw_duration_parse(after, &p->consolidate_after, NULL) != NW_OK ||
                       p->consolidate_after < 0))
        p->consolidation_never = true; /* unparseable: do not consolidate */
}

/* consolidatable_at with the pool's settings already read (a state build reads each
 * pool's once, not once per node) */
static int64_t consolidatable_at(const nw_node_claim_t *nc, const nw_disrupt_pool_t *p)
{
    if (p->consolidation_never || !cond_true(&nc->m, "Initialized"))
        return 0;
    int64_t t = nc->last_pod_event;
    if (!t)
        t = cond_time(&nc->m, "Initialized");
    if (!t)
        return 0;
    return t + p->consolidate_after;
}

int64_t nw_candidates_consolidatable_at(const nw_node_claim_t *nc, const cJSON *pool)
{
    nw_disrupt_pool_t p = {.obj = pool};
    pool_settings(&p);
    return consolidatable_at(nc, &p);
}

/* ---- state ---- */

typedef struct {
    const char *node;
    const nw_pod_t *pod;
} podref_t;

static int podref_cmp(const void *a, const void *b)
{
    return strcmp(((const podref_t *)a)->node, ((const podref_t *)b)->node);
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp(((const nw_disrupt_node_t *)a)->name, ((const nw_disrupt_node_t *)b)->name);
}

static bool in_list(const char *const *l, size_t n, const char *s)
{
    for (size_t i = 0; s && *s && i < n; i++)
        if (l[i] && strcmp(l[i], s) == 0)
            return true;
    return false;
}

static double lifetime_remaining(const nw_node_claim_t *nc, int64_t now)
{
    const char *ea = nc->expire_after_set ? nc->expire_after : NULL;
    int64_t d = 0;
    if (!ea || strcmp(ea, "Never") == 0 || nw_duration_parse(ea, &d, NULL) != NW_OK || d <= 0)
        return 1.0;
    int64_t created = nc->m.created;
    if (!created)
        return 1.0;
    double r = (double)(d - (now - created)) / (double)d;
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

/* A PodDisruptionBudget as the pod rules read it, decoded once per state build. */
typedef struct {
    const char *ns, *name;
    const cJSON *selector;
    bool always_allow; /* unhealthyPodEvictionPolicy: AlwaysAllow */
    bool allows;       /* status.disruptionsAllowed >= 1 */
} pdbref_t;

/* Lookups a state build makes for every NodeClaim: the nodes by provider ID and by
 * name, the PDBs by namespace. Built once (n log n), so the build is not nodes x nodes
 * or pods x PDBs. */
typedef struct {
    const char *key;
    size_t at; /* index into the input's array: the first of equal keys wins */
} keyref_t;

typedef struct {
    keyref_t *by_pid, *by_name;
    size_t npid, nname;
    pdbref_t *pdbs; /* sorted by namespace */
    size_t npdbs;
} lookups_t;

static int pdbref_cmp(const void *a, const void *b)
{
    return strcmp(((const pdbref_t *)a)->ns, ((const pdbref_t *)b)->ns);
}

static int keyref_cmp(const void *a, const void *b)
{
    const keyref_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The first input node with this key, or NULL. */
static const nw_node_t *keyref_find(const nw_disrupt_input_t *in, const keyref_t *v, size_t n,
                                    const char *key)
{
    size_t k, lo = nw_strs_lower(v, n, sizeof *v, offsetof(keyref_t, key), key, &k);
    return k ? in->nodes[v[lo].at] : NULL;
}

/* qsort, after a walk that finds most inputs (the cache's, in key order) already in order */
static void sort_unless_sorted(void *base, size_t n, size_t size,
                               int (*cmp)(const void *, const void *))
{
    const char *b = base;
    for (size_t i = 1; i < n; i++)
        if (cmp(b + (i - 1) * size, b + i * size) > 0) {
            qsort(base, n, size, cmp);
            return;
        }
}

static void lookups_free(lookups_t *lk)
{
    free(lk->by_pid);
    free(lk->by_name);
    free(lk->pdbs);
}

static NW_MUST_USE nw_rc_t lookups_build(const nw_disrupt_input_t *in, lookups_t *lk)
{
    *lk = (lookups_t){0};
    if (in->nnodes) {
        lk->by_pid = calloc(in->nnodes, sizeof *lk->by_pid);
        lk->by_name = calloc(in->nnodes, sizeof *lk->by_name);
        if (!lk->by_pid || !lk->by_name)
            return NW_ENOMEM;
    }
    for (size_t k = 0; k < in->nnodes; k++) {
        const char *npid = in->nodes[k]->provider_id;
        const char *kn = in->nodes[k]->m.name;
        if (*npid)
            lk->by_pid[lk->npid++] = (keyref_t){npid, k};
        if (*kn)
            lk->by_name[lk->nname++] = (keyref_t){kn, k};
    }
    /* the cache lists Nodes in name order: their names (and often their provider IDs)
     * need no sort, only the check */
    sort_unless_sorted(lk->by_pid, lk->npid, sizeof *lk->by_pid, keyref_cmp);
    sort_unless_sorted(lk->by_name, lk->nname, sizeof *lk->by_name, keyref_cmp);
    if (in->npdbs && !(lk->pdbs = calloc(in->npdbs, sizeof *lk->pdbs)))
        return NW_ENOMEM;
    for (size_t k = 0; k < in->npdbs; k++) {
        const cJSON *pdb = in->pdbs[k];
        const char *pns = nw_json_str(nw_json_get(pdb, "metadata"), "namespace");
        if (!pns)
            continue;
        const char *pol = nw_json_str(nw_json_get(pdb, "spec"), "unhealthyPodEvictionPolicy");
        const cJSON *da = nw_json_get(nw_json_get(pdb, "status"), "disruptionsAllowed");
        lk->pdbs[lk->npdbs++] = (pdbref_t){
            .ns = pns,
            .name = nw_json_str(nw_json_get(pdb, "metadata"), "name"),
            .selector = nw_json_get(nw_json_get(pdb, "spec"), "selector"),
            .always_allow = pol && strcmp(pol, "AlwaysAllow") == 0,
            .allows = cJSON_IsNumber(da) && da->valuedouble >= 1,
        };
    }
    /* stable enough: PDBs of one namespace keep no meaningful order (the first match
     * only names the PDB in a message) */
    if (lk->npdbs)
        qsort(lk->pdbs, lk->npdbs, sizeof *lk->pdbs, pdbref_cmp);
    return NW_OK;
}

/* The PDBs of a namespace: *first and the count. */
static size_t pdbs_in(const lookups_t *lk, const char *ns, const pdbref_t **first)
{
    size_t n;
    *first = lk->pdbs +
             nw_strs_lower(lk->pdbs, lk->npdbs, sizeof *lk->pdbs, offsetof(pdbref_t, ns), ns, &n);
    return n;
}

/* The pod rules over a node's pods (kubernetes-sigs/karpenter pkg/controllers/state/statenode.go
 * ValidatePodsDisruptable); fills why and returns true when they block. */
static bool pods_block(const nw_disrupt_input_t *in, const lookups_t *lk,
                       const nw_pod_t *const *pods, size_t n, char *why, size_t wn)
{
    for (size_t i = 0; i < n; i++) {
        const nw_pod_t *p = pods[i];
        if (!pod_active(p))
            continue;
        if (nw_candidates_pod_do_not_disrupt(p, in->now)) {
            snprintf(why, wn, "pod %s/%s has \"%s\"", p->ns, p->name, NW_DIS_DND);
            return true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const nw_pod_t *p = pods[i];
        /* evictable: active, not tolerating the disrupted taint, not mirror, no do-not-disrupt */
        if (!pod_active(p) || tolerates_disrupted(p) || pod_mirror(p) || !p->ns)
            continue;
        const pdbref_t *pdbs;
        size_t npdbs = pdbs_in(lk, p->ns, &pdbs);
        int matched = 0;
        for (size_t k = 0; k < npdbs; k++) {
            const pdbref_t *pdb = &pdbs[k];
            if (!nw_candidates_selector_matches(pdb->selector, p->labels))
                continue;
            matched++;
            if (pdb->always_allow && pod_ready_false(p))
                continue;
            if (!pdb->allows) {
                snprintf(why, wn, "pdb %s/%s prevents pod evictions", pdb->ns,
                         pdb->name ? pdb->name : "");
                return true;
            }
        }
        if (matched > 1) {
            snprintf(why, wn, "pod %s/%s is selected by more than one PodDisruptionBudget", p->ns,
                     p->name);
            return true;
        }
    }
    return false;
}

static bool annotated_dnd(const nw_node_meta_t *m)
{
    const char *v = nw_node_meta_annotation(m, NW_DIS_DND);
    return v && strcmp(v, "true") == 0;
}

/* The pods bound to a node into refs (in->npods entries), sorted by node name; their count. */
static size_t index_pods(const nw_disrupt_input_t *in, podref_t *refs)
{
    size_t nrefs = 0;
    for (size_t i = 0; i < in->npods; i++) {
        const char *nn = in->pods[i]->node_name;
        if (*nn) {
            refs[nrefs].node = nn;
            refs[nrefs++].pod = in->pods[i];
        }
    }
    if (nrefs)
        qsort(refs, nrefs, sizeof *refs, podref_cmp);
    return nrefs;
}

/* The NodePools with a name, with their consolidation settings. */
static void collect_pools(nw_disrupt_state_t *st, const nw_disrupt_input_t *in)
{
    for (size_t i = 0; i < in->nnodepools; i++) {
        nw_disrupt_pool_t *p = &st->pools[st->npools];
        p->obj = in->nodepools[i];
        p->name = nw_json_str(nw_json_get(p->obj, "metadata"), "name");
        if (!p->name)
            continue;
        pool_settings(p);
        st->npools++;
    }
}

/* A light look's match from an earlier light state (nw_disrupt_input_t.reuse): the m-th
 * managed NodeClaim of the input is the m-th node there (the cache lists NodeClaims in
 * name order, the state's order) when its record is the same; false when it is not. */
static bool match_reused(const nw_disrupt_input_t *in, size_t m, nw_disrupt_node_t *n)
{
    const nw_disrupt_state_t *r = in->reuse;
    if (!r || !in->light || m >= r->nnodes || r->nodes[m].nodeclaim != n->nodeclaim)
        return false;
    const nw_disrupt_node_t *o = &r->nodes[m];
    n->pool = o->pool;
    n->node = o->node;
    n->node_name = o->node_name;
    n->itype = o->itype;
    n->zone = o->zone;
    n->capacity_type = o->capacity_type;
    n->price = -1; /* a light look prices nothing */
    return true;
}

/* The NodeClaim's pool, its Node, instance type, zone, capacity type and price. */
static void match_node(const nw_disrupt_state_t *st, const nw_disrupt_input_t *in,
                       const lookups_t *lk, nw_disrupt_node_t *n, const char *poolname)
{
    const nw_node_meta_t *nc = &n->nodeclaim->m;
    n->pool = -1;
    for (size_t k = 0; k < st->npools; k++)
        if (strcmp(st->pools[k].name, poolname) == 0)
            n->pool = (int)k;
    const char *pid = n->nodeclaim->provider_id;
    const char *nname = n->nodeclaim->node_name;
    if (*pid)
        n->node = keyref_find(in, lk->by_pid, lk->npid, pid);
    else if (*nname)
        n->node = keyref_find(in, lk->by_name, lk->nname, nname);
    n->node_name = n->node ? n->node->m.name : "";
    const nw_node_meta_t *lsrc = n->node ? &n->node->m : nc;
    n->itype = md_label(lsrc, "node.kubernetes.io/instance-type");
    n->zone = md_label(lsrc, "topology.kubernetes.io/zone");
    n->capacity_type = md_label(lsrc, "karpenter.sh/capacity-type");
    if (!n->itype)
        n->itype = md_label(nc, "node.kubernetes.io/instance-type");
    if (!n->zone)
        n->zone = md_label(nc, "topology.kubernetes.io/zone");
    if (!n->capacity_type)
        n->capacity_type = md_label(nc, "karpenter.sh/capacity-type");
    n->itype = n->itype ? n->itype : "";
    n->zone = n->zone ? n->zone : "";
    n->capacity_type = n->capacity_type ? n->capacity_type : "";
    n->price = -1;
    if (in->price && !in->light && *n->itype && *n->zone && *n->capacity_type)
        n->price = in->price(in->price_ud, n->itype, n->zone, n->capacity_type);
}

/* The pods on the node (from refs) and what moving them costs. */
static NW_MUST_USE nw_rc_t attach_pods(const nw_disrupt_input_t *in, nw_disrupt_node_t *n,
                                       const podref_t *refs, size_t nrefs, int64_t now)
{
    if (*n->node_name && in->pods_on) {
        const nw_pod_t **v = NULL;
        size_t cnt = in->pods_on(in->pods_on_ud, n->node_name, &v);
        if (cnt == (size_t)-1)
            return NW_ENOMEM;
        n->pods = v;
        n->npods = v ? cnt : 0;
    } else if (*n->node_name && nrefs) {
        podref_t key = {n->node_name, NULL};
        const podref_t *hit = bsearch(&key, refs, nrefs, sizeof *refs, podref_cmp);
        if (hit) {
            while (hit > refs && strcmp(hit[-1].node, n->node_name) == 0)
                hit--;
            size_t cnt = 0;
            while (hit + cnt < refs + nrefs && strcmp(hit[cnt].node, n->node_name) == 0)
                cnt++;
            n->pods = calloc(cnt, sizeof *n->pods);
            if (!n->pods)
                return NW_ENOMEM;
            for (size_t k = 0; k < cnt; k++)
                n->pods[k] = hit[k].pod;
            n->npods = cnt;
        }
    }
    double cost = 0;
    for (size_t k = 0; k < n->npods; k++) {
        if (!nw_candidates_pod_reschedulable(n->pods[k]))
            continue;
        double ec = nw_candidates_eviction_cost(n->pods[k]);
        cost += ec;
        n->move_cost += ec > 0 ? ec : 0;
        if (ec > 0)
            n->nresched++;
    }
    n->disruption_cost = cost * lifetime_remaining(n->nodeclaim, now);
    n->move_cost += 1.0; /* the per-node base */
    return NW_OK;
}

/* The node's state: initialized, deleting, ready, drifted, counted, consolidatable, ... */
static void node_state(const nw_disrupt_state_t *st, const nw_disrupt_input_t *in,
                       nw_disrupt_node_t *n)
{
    const nw_node_meta_t *nc = &n->nodeclaim->m;
    n->initialized = cond_true(nc, "Initialized") && n->node;
    n->deleting = nc->terminating || (n->node && n->node->m.terminating);
    n->in_command = in_list(in->in_command, in->nin_command, n->name);
    n->nominated = in_list(in->nominated, in->nnominated, n->node_name);
    n->ready = n->node && cond_true(&n->node->m, "Ready");
    n->has_tgp = n->nodeclaim->tgp_set;
    n->drifted = cond_true(nc, "Drifted");
    n->drifted_at = n->drifted ? cond_time(nc, "Drifted") : 0;
    n->last_pod_event = n->nodeclaim->last_pod_event;
    n->counted = n->initialized && !cond_true(nc, "InstanceTerminating");
    n->disrupting = n->counted && (!n->ready || n->deleting || n->in_command);
    if (n->pool >= 0) {
        n->consolidatable_at = consolidatable_at(n->nodeclaim, &st->pools[n->pool]);
        n->consolidatable = n->consolidatable_at && in->now >= n->consolidatable_at;
    }
}

/* GPU-aware disruption: the node's accelerator class (its label), the pods of the class
 * on it, and when it becomes reclaimable: a pod of the class last ran there at
 * accel_since (the caller's memory, else the last pod event, else the initialization),
 * and the pool's consolidateAfter has passed since. */
static void accel_state(const nw_disrupt_state_t *st, const nw_disrupt_input_t *in,
                        nw_disrupt_node_t *n)
{
    n->accel = -1;
    if (!in->naccels || !in->accel_label_key || !n->node)
        return;
    const char *v = md_label(&n->node->m, in->accel_label_key);
    if (!v)
        v = md_label(&n->nodeclaim->m, in->accel_label_key);
    for (size_t i = 0; v && i < in->naccels && n->accel < 0; i++)
        if (in->accels[i].aware && in->accels[i].label_value &&
            strcmp(v, in->accels[i].label_value) == 0)
            n->accel = (int)i;
    if (n->accel < 0)
        return;
    /* a node agent (DaemonSet, mirror pod) that asks for a device is no workload of the
     * class: it would keep the node forever */
    for (size_t k = 0; k < n->npods; k++)
        if (pod_active(n->pods[k]) && !nw_pod_owned_by(n->pods[k], "DaemonSet") &&
            !pod_mirror(n->pods[k]) && nw_accel_pod_uses(n->pods[k], &in->accels[n->accel]))
            n->accel_pods++;
    if (n->accel_pods || n->pool < 0 || !n->initialized || st->pools[n->pool].consolidation_never)
        return;
    int64_t since = in->accel_last_used ? in->accel_last_used(in->accel_ud, n->name) : 0;
    if (!since)
        since = n->last_pod_event;
    int64_t init = cond_time(&n->nodeclaim->m, "Initialized");
    if (since < init)
        since = init;
    if (!since)
        return;
    n->accel_since = since;
    n->accel_idle_at = since + st->pools[n->pool].consolidate_after;
    n->accel_idle = in->now >= n->accel_idle_at;
}

/* Does the NodeClaim or its Node carry the accelerator label (any value)? */
static bool accel_labelled(const nw_disrupt_input_t *in, const nw_disrupt_node_t *n)
{
    const char *key = in->accel_label_key;
    return key && in->naccels &&
           ((n->node && md_label(&n->node->m, key)) || md_label(&n->nodeclaim->m, key));
}

/* The candidate rules (pkg/controllers/disruption/types.go NewCandidate), first failure wins. */
static void judge_candidate(const nw_disrupt_input_t *in, const lookups_t *lk, nw_disrupt_node_t *n)
{
    const char *why = NULL;
    if (!n->node)
        why = "no node";
    else if (!n->initialized)
        why = "not initialized";
    else if (n->deleting)
        why = "being deleted";
    else if (n->in_command)
        why = "part of a disruption command";
    else if (n->nominated)
        why = "nominated for pods by a recent provisioning pass";
    else if (annotated_dnd(&n->node->m) || annotated_dnd(&n->nodeclaim->m))
        why = "annotated karpenter.sh/do-not-disrupt";
    else if (n->pool < 0)
        why = "its NodePool does not exist";
    if (why) {
        snprintf(n->why, sizeof n->why, "%s", why);
    } else if (pods_block(in, lk, n->pods, n->npods, n->why, sizeof n->why)) {
        n->pods_block = true;
    } else {
        n->candidate = true;
        n->empty = n->nresched == 0;
    }
}

/* Per pool: the counted and disrupting nodes, the Balanced totals and the budgets left. */
static void count_budgets(nw_disrupt_state_t *st, const nw_disrupt_input_t *in)
{
    for (size_t i = 0; i < st->nnodes; i++) {
        nw_disrupt_node_t *n = &st->nodes[i];
        if (n->pool < 0)
            continue;
        st->pools[n->pool].counted += n->counted;
        st->pools[n->pool].disrupting += n->disrupting;
        /* Balanced totals (kubernetes-sigs/karpenter pkg/controllers/disruption/balanced.go
         * computeNodePoolTotals): every candidate with a price */
        if (n->candidate && n->price > 0) {
            st->pools[n->pool].total_cost += n->price;
            st->pools[n->pool].total_disruption += n->move_cost;
        }
    }
    for (size_t k = 0; k < st->npools; k++) {
        nw_disrupt_pool_t *p = &st->pools[k];
        for (int r = 0; r < NW_DIS_NREASONS; r++) {
            nw_err_t e = {0};
            int a = nw_budget_allowed(p->obj, (nw_disrupt_reason_t)r, p->counted, in->now, &e);
            if (e.rc != NW_OK && !p->budget_error[0])
                snprintf(p->budget_error, sizeof p->budget_error, "%.100s: %.140s", e.path, e.msg);
            if (a != NW_DIS_UNLIMITED)
                a = a - p->disrupting > 0 ? a - p->disrupting : 0;
            p->allowed[r] = a;
        }
    }
}

nw_rc_t nw_candidates_state_build(const nw_disrupt_input_t *in, nw_disrupt_state_t **out,
                                  nw_err_t *err)
{
    *out = NULL;
    nw_disrupt_state_t *st = calloc(1, sizeof *st);
    podref_t *refs = in->npods && !in->pods_on ? calloc(in->npods, sizeof *refs) : NULL;
    lookups_t lk = {0};
    /* the lookups, unless every node's match comes from an earlier light state */
    bool looked = !in->reuse || !in->light;
    if ((looked && lookups_build(in, &lk) != NW_OK) || !st || (in->npods && !in->pods_on && !refs))
        goto oom;
    st->in = *in;
    st->in.reuse = NULL; /* read during the build only */
    size_t nrefs = refs ? index_pods(in, refs) : 0;
    st->pools = in->nnodepools ? calloc(in->nnodepools, sizeof *st->pools) : NULL;
    st->nodes = in->nnodeclaims ? calloc(in->nnodeclaims, sizeof *st->nodes) : NULL;
    if ((in->nnodepools && !st->pools) || (in->nnodeclaims && !st->nodes))
        goto oom;
    collect_pools(st, in);
    for (size_t i = 0; i < in->nnodeclaims; i++) {
        const nw_node_claim_t *nc = in->nodeclaims[i];
        const char *name = nc->m.name;
        const char *poolname = md_label(&nc->m, NW_LABEL_NODEPOOL);
        if (!*name || !poolname)
            continue; /* not managed */
        size_t m = st->nnodes;
        nw_disrupt_node_t *n = &st->nodes[st->nnodes++];
        n->name = name;
        n->nodeclaim = nc;
        if (!match_reused(in, m, n)) {
            if (!looked && lookups_build(in, &lk) != NW_OK)
                goto oom;
            looked = true;
            match_node(st, in, &lk, n, poolname);
        }
        /* a light look attaches the pods of accelerator nodes only (their class's pods
         * decide the accelerator and rollout fields) */
        if ((!in->light || accel_labelled(in, n)) &&
            attach_pods(in, n, refs, nrefs, in->now) != NW_OK)
            goto oom;
        node_state(st, in, n);
        accel_state(st, in, n);
        if (in->light)
            snprintf(n->why, sizeof n->why, "not judged");
        else
            judge_candidate(in, &lk, n);
    }
    sort_unless_sorted(st->nodes, st->nnodes, sizeof *st->nodes, node_cmp);
    count_budgets(st, in);
    nw_rollout_build(st);
    free(refs);
    lookups_free(&lk);
    *out = st;
    return NW_OK;
oom:
    free(refs);
    lookups_free(&lk);
    nw_candidates_state_free(st);
    return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
}

void nw_candidates_state_free(nw_disrupt_state_t *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->nnodes; i++)
        free(st->nodes[i].pods);
    free(st->nodes);
    free(st->pools);
    free(st);
}

const nw_disrupt_node_t *nw_candidates_state_node(const nw_disrupt_state_t *st,
                                                  const char *nodeclaim)
{
    nw_disrupt_node_t key = {.name = nodeclaim};
    if (!st->nnodes)
        return NULL;
    return bsearch(&key, st->nodes, st->nnodes, sizeof *st->nodes, node_cmp);
}
