/*
 * scaler/disrupt/sim.c — consolidation simulation over scaler/sched (see sim.h).
 */
#include "common/json.h"
#include "api/wellknown.h"
#include "scaler/disrupt/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/disrupt/simres.h"
#include "scaler/sched/schedule.h"

typedef struct {
    nw_sched_snap_t *snap;
    nw_sched_results_t res;
    int *claim_of; /* repl index -> results claim index */
} handle_t;

static void handle_free(void *h)
{
    handle_t *x = h;
    if (!x)
        return;
    nw_solve_results_free(&x->res);
    nw_snapshot_free(x->snap);
    free(x->claim_of);
    free(x);
}

static const char *name_of(const cJSON *o)
{
    return nw_json_str(nw_json_get(o, "metadata"), "name");
}

static bool deleting(const cJSON *o)
{
    const cJSON *d = nw_json_get(nw_json_get(o, "metadata"), "deletionTimestamp");
    return d && !cJSON_IsNull(d);
}

static bool in_names(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (v[i] && strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* is the node (or in-flight NodeClaim) `name` initialized in the cluster's view */
static bool target_initialized(const nw_disrupt_simctx_t *x, const char *name)
{
    for (size_t i = 0; i < x->nnodes; i++)
        if (strcmp(x->nodes[i]->m.name, name) == 0) {
            const nw_node_meta_t *m = &x->nodes[i]->m;
            if (!nw_node_meta_label(m, NW_LABEL_NODEPOOL))
                return true; /* not managed: initialized by definition */
            const char *v = nw_node_meta_label(m, "karpenter.sh/initialized");
            return v && strcmp(v, "true") == 0;
        }
    return false; /* an in-flight NodeClaim */
}

static double max_or(double cur, double p)
{
    return p > cur ? p : cur;
}

static NW_MUST_USE nw_rc_t to_repl(const nw_sched_snap_t *s, const nw_sched_claim_t *c,
                                   nw_disrupt_repl_t *r)
{
    snprintf(r->pool, sizeof r->pool, "%s", nw_snapshot_pool_name(s, (size_t)c->pool));
    const nw_req_t *ct = nw_requirements_get(&c->reqs, "karpenter.sh/capacity-type");
    const nw_req_t *zr = nw_requirements_get(&c->reqs, "topology.kubernetes.io/zone");
    const nw_req_t *it = nw_requirements_get(&c->reqs, "node.kubernetes.io/instance-type");
    r->allow_on_demand = !ct || nw_requirements_req_matches(ct, "on-demand");
    r->allow_spot = !ct || nw_requirements_req_matches(ct, "spot");
    r->allow_reserved = ct && !ct->complement && nw_requirements_req_matches(ct, "reserved");
    r->min_values = it ? it->min_values : 0;
    r->types = calloc((size_t)c->nitypes + 1, sizeof *r->types);
    if (!r->types)
        return NW_ENOMEM;
    for (int i = 0; i < c->nitypes; i++) {
        const nw_sched_itype_t *t = nw_snapshot_itype(s, (size_t)c->itypes[i]);
        nw_disrupt_topt_t *o = &r->types[r->ntypes];
        snprintf(o->name, sizeof o->name, "%s", t->name);
        o->on_demand = o->spot = o->reserved = -1;
        for (int k = 0; k < t->noffer; k++) {
            const nw_sched_offering_t *of = &t->offerings[k];
            if (!of->available || of->price <= 0 ||
                (zr && !nw_requirements_req_matches(zr, of->zone)))
                continue;
            if (strcmp(of->capacity_type, "on-demand") == 0)
                o->on_demand = max_or(o->on_demand, of->price);
            else if (strcmp(of->capacity_type, "spot") == 0)
                o->spot = max_or(o->spot, of->price);
            else if (strcmp(of->capacity_type, "reserved") == 0)
                o->reserved = max_or(o->reserved, of->price);
        }
        r->ntypes++;
    }
    return NW_OK;
}

typedef struct {
    const nw_sched_snap_t *snap;
    const char *const *must;
    size_t nmust;
    const nw_disrupt_simctx_t *x;
} must_t;

static bool must_pod(void *ud, int pod)
{
    const must_t *m = ud;
    return in_names(m->must, m->nmust, nw_snapshot_pod_key(m->snap, (size_t)pod));
}

static bool target_init(void *ud, const char *target)
{
    const must_t *m = ud;
    return target_initialized(m->x, target);
}

nw_rc_t nw_disrupt_sim_interpret(const nw_sched_snap_t *snap, const nw_sched_results_t *res,
                                 bool (*must)(void *ud, int pod),
                                 bool (*initialized)(void *ud, const char *target), void *ud,
                                 nw_disrupt_sim_t *out, int *claim_of, nw_err_t *err)
{
    out->ok = true;
    for (int i = 0; i < res->nunsched && out->ok; i++) {
        const nw_sched_unsched_t *u = &res->unsched[i];
        if (!must(ud, u->pod))
            continue;
        const char *why = u->reason;
        for (int k = 0; !why && k < u->nreasons; k++)
            why = u->reasons[k];
        snprintf(out->why, sizeof out->why, "pod %.80s cannot be placed: %.120s",
                 nw_snapshot_pod_key(snap, (size_t)u->pod), why ? why : "no capacity");
        out->ok = false;
    }
    for (int i = 0; i < res->nplaced && out->ok; i++)
        if (!initialized(ud, res->placed[i].node)) {
            snprintf(out->why, sizeof out->why,
                     "would schedule pod %.100s against uninitialized node %.100s",
                     nw_snapshot_pod_key(snap, (size_t)res->placed[i].pod), res->placed[i].node);
            out->ok = false;
        }
    /* only claims that carry an excluded node's pod are replacements; claims for pods
     * that were pending anyway are the provisioner's business */
    out->repl = calloc((size_t)res->nclaims + 1, sizeof *out->repl);
    if (!out->repl)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < res->nclaims; i++) {
        const nw_sched_claim_t *c = &res->claims[i];
        bool ours = false;
        for (int k = 0; k < c->npods && !ours; k++)
            ours = must(ud, c->pods[k]);
        if (!ours)
            continue;
        if (to_repl(snap, c, &out->repl[out->nrepl]) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        claim_of[out->nrepl++] = i;
    }
    return NW_OK;
}

/* The node names to take away into gone: the candidates' (the first, returned in *ncand)
 * and every deleting node; their count. */
static size_t collect_gone(const nw_disrupt_simctx_t *x, const nw_disrupt_state_t *st,
                           const char *const *ncs, size_t n, const char **gone, size_t *ncand)
{
    size_t ngone = 0;
    for (size_t i = 0; i < n; i++) {
        const nw_disrupt_node_t *dn = nw_candidates_state_node(st, ncs[i]);
        if (dn && dn->node_name[0])
            gone[ngone++] = dn->node_name;
    }
    *ncand = ngone;
    for (size_t i = 0; i < x->nnodes; i++)
        if (x->nodes[i]->m.terminating)
            gone[ngone++] = x->nodes[i]->m.name;
    return ngone;
}

/* The cluster without the gone nodes: instance types, NodePools, DaemonSets, the nodes
 * and the NodeClaims not yet nodes. */
static NW_MUST_USE nw_rc_t add_cluster(nw_sched_snap_t *snap, const nw_disrupt_simctx_t *x,
                                       const char *const *ncs, size_t n, const char *const *gone,
                                       size_t ngone, nw_err_t *err)
{
    nw_rc_t rc;
    nw_sched_opts_t opts = {.require_unschedulable = false, .ignore_preferences = false};
    nw_snapshot_set_opts(snap, &opts);
    if (x->add_types && (rc = x->add_types(x->types_ud, snap, err)) != NW_OK)
        return rc;
    nw_err_t e = {0};
    for (size_t i = 0; i < x->nnodepools; i++)
        if (!deleting(x->nodepools[i]))
            (void)nw_snap_node_add_pool_json(snap, x->nodepools[i], &e); /* bad pools stay out */
    for (size_t i = 0; i < x->ndaemonsets; i++)
        (void)nw_snap_node_add_daemonset_json(snap, x->daemonsets[i], &e);
    for (size_t i = 0; i < x->nnodes; i++)
        if (!in_names(gone, ngone, x->nodes[i]->m.name))
            (void)nw_snap_node_add_node(snap, x->nodes[i], &e);
    for (size_t i = 0; i < x->nnodeclaims; i++) {
        const nw_node_claim_t *nc = x->nodeclaims[i];
        const char *nn = nc->node_name[0] ? nc->node_name : NULL;
        if (nc->m.terminating || in_names(ncs, n, nc->m.name) || in_names(gone, ngone, nn))
            continue;
        (void)nw_snap_node_add_claim(snap, nc, &e); /* skipped when its node exists */
    }
    return NW_OK;
}

/* The pods: those on gone nodes pending again (when reschedulable), the others where they
 * are; must gets the "ns/name" of the candidates' pods (*nmust of them). */
static NW_MUST_USE nw_rc_t add_pods(nw_sched_snap_t *snap, const nw_disrupt_simctx_t *x,
                                    const char *const *gone, size_t ngone, size_t ncand,
                                    char **must, size_t *nmust, nw_err_t *err)
{
    nw_err_t e = {0};
    for (size_t i = 0; i < x->npods; i++) {
        const nw_pod_t *p = x->pods[i];
        const char *nn = p->node_name;
        if (nw_pod_is_terminal(p))
            continue;
        if (*nn && in_names(gone, ngone, nn)) {
            if (!nw_candidates_pod_reschedulable(p))
                continue;
            /* pending again: the same record, unbound and not terminating (a borrowed
             * copy: the snapshot copies what it keeps) */
            nw_pod_t cp = *p;
            cp.node_name = "";
            cp.terminating = false;
            cp.deleted = 0;
            nw_err_clear(&e);
            (void)nw_snap_pod_add(snap, &cp, &e);
            if (in_names(gone, ncand, nn)) {
                must[*nmust] = strdup(p->key);
                if (must[*nmust])
                    (*nmust)++;
            }
            continue;
        }
        nw_err_clear(&e);
        (void)nw_snap_pod_add(snap, p, &e);
    }
    (void)err;
    return NW_OK;
}

nw_rc_t nw_disrupt_sim_schedule(void *ud, const nw_disrupt_state_t *st, const char *const *ncs,
                                size_t n, nw_disrupt_sim_t *out, nw_err_t *err)
{
    const nw_disrupt_simctx_t *x = ud;
    memset(out, 0, sizeof *out);
    /* node names to take away: the candidates' and every deleting node */
    const char **gone = calloc(n + x->nnodes + 1, sizeof *gone);
    size_t ngone = 0, ncand = 0;
    handle_t *h = calloc(1, sizeof *h);
    char **must = NULL; /* "ns/name" of the candidates' pods */
    size_t nmust = 0;
    nw_rc_t rc = NW_OK;
    if (!gone || !h || !(h->snap = nw_snapshot_new())) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto out;
    }
    ngone = collect_gone(x, st, ncs, n, gone, &ncand);
    if ((rc = add_cluster(h->snap, x, ncs, n, gone, ngone, err)) != NW_OK)
        goto out;
    must = calloc(x->npods + 1, sizeof *must);
    if (!must) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if ((rc = add_pods(h->snap, x, gone, ngone, ncand, must, &nmust, err)) != NW_OK)
        goto out;
    if ((rc = nw_solve(h->snap, x->now, &h->res, err)) != NW_OK)
        goto out;
    h->claim_of = calloc((size_t)h->res.nclaims + 1, sizeof *h->claim_of);
    if (!h->claim_of) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto out;
    }
    must_t mu = {h->snap, (const char *const *)must, nmust, x};
    if ((rc = nw_disrupt_sim_interpret(h->snap, &h->res, must_pod, target_init, &mu, out,
                                       h->claim_of, err)) != NW_OK)
        goto out;
    out->handle = h;
    out->handle_free = handle_free;
    h = NULL;
out:
    for (size_t i = 0; i < nmust; i++)
        free(must[i]);
    free(must);
    free(gone);
    handle_free(h);
    if (rc != NW_OK)
        nw_decide_sim_cleanup(out);
    return rc;
}

/* ---- the replacement NodeClaim ---- */

static void add_req(cJSON *arr, const char *key, const char *op, char **vals, size_t n,
                    int min_values)
{
    cJSON *r = nw_json_new_object();
    nw_json_add_string(r, "key", key);
    nw_json_add_string(r, "operator", op);
    if (vals) {
        cJSON *v = nw_json_add_array(r, "values");
        for (size_t i = 0; i < n; i++)
            nw_json_push(v, nw_json_new_string(vals[i]));
    }
    if (min_values > 0)
        nw_json_add_number(r, "minValues", min_values);
    nw_json_push(arr, r);
}

static void add_bound(cJSON *arr, const char *key, const char *op, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    char *vals[1] = {b};
    add_req(arr, key, op, vals, 1, 0);
}

static cJSON *reqs_json(const nw_reqs_t *rs, const nw_disrupt_repl_t *rp)
{
    cJSON *arr = nw_json_new_array();
    for (size_t i = 0; i < rs->n; i++) {
        const nw_req_t *r = &rs->v[i];
        if (strcmp(r->key, "node.kubernetes.io/instance-type") == 0) {
            char **names = calloc((size_t)rp->ntypes + 1, sizeof *names);
            for (int k = 0; names && k < rp->ntypes; k++)
                names[k] = (char *)rp->types[k].name;
            add_req(arr, r->key, "In", names, names ? (size_t)rp->ntypes : 0, r->min_values);
            free(names);
            continue;
        }
        if (strcmp(r->key, "karpenter.sh/capacity-type") == 0) {
            char *cts[3];
            size_t n = 0;
            if (rp->allow_reserved)
                cts[n++] = "reserved";
            if (rp->allow_spot)
                cts[n++] = "spot";
            if (rp->allow_on_demand)
                cts[n++] = "on-demand";
            add_req(arr, r->key, "In", cts, n, r->min_values);
            continue;
        }
        if (!r->complement)
            add_req(arr, r->key, r->nvalues ? "In" : "DoesNotExist", r->nvalues ? r->values : NULL,
                    r->nvalues, r->min_values);
        else {
            if (r->nvalues)
                add_req(arr, r->key, "NotIn", r->values, r->nvalues, r->min_values);
            if (r->has_gte)
                add_bound(arr, r->key, "Gt", r->gte - 1);
            if (r->has_lte)
                add_bound(arr, r->key, "Lt", r->lte + 1);
            if (!r->nvalues && !r->has_gte && !r->has_lte)
                add_req(arr, r->key, "Exists", NULL, 0, r->min_values);
        }
    }
    if (!nw_requirements_get(rs, "karpenter.sh/capacity-type")) {
        char *cts[3];
        size_t n = 0;
        if (rp->allow_spot)
            cts[n++] = "spot";
        if (rp->allow_on_demand)
            cts[n++] = "on-demand";
        add_req(arr, "karpenter.sh/capacity-type", "In", cts, n, 0);
    }
    return arr;
}

cJSON *nw_disrupt_sim_replacement_json(const nw_disrupt_sim_t *sim, int k, const cJSON *pool)
{
    const handle_t *h = sim ? sim->handle : NULL;
    if (!h || k < 0 || k >= sim->nrepl || sim->handle_free != handle_free)
        return NULL;
    const nw_sched_claim_t *c = &h->res.claims[h->claim_of[k]];
    const nw_disrupt_repl_t *rp = &sim->repl[k];
    const char *poolname = name_of(pool);
    const cJSON *tmpl = nw_json_get(nw_json_get(pool, "spec"), "template");
    const cJSON *tspec = nw_json_get(tmpl, "spec");
    const char *class = nw_json_str(nw_json_get(tspec, "nodeClassRef"), "name");
    cJSON *nc = nw_json_new_object();
    nw_json_add_string(nc, "apiVersion", "karpenter.sh/v1");
    nw_json_add_string(nc, "kind", "NodeClaim");
    cJSON *md = nw_json_add_object(nc, "metadata");
    char gen[300];
    snprintf(gen, sizeof gen, "%s-", poolname ? poolname : "nodeclaim");
    nw_json_add_string(md, "generateName", gen);
    const cJSON *tl = nw_json_get(nw_json_get(tmpl, "metadata"), "labels");
    cJSON *labels = tl ? nw_json_dup(tl) : nw_json_new_object();
    cJSON_DeleteItemFromObjectCaseSensitive(labels, NW_LABEL_NODEPOOL);
    nw_json_add_string(labels, NW_LABEL_NODEPOOL, poolname ? poolname : "");
    if (class) {
        cJSON_DeleteItemFromObjectCaseSensitive(labels, "karpenter.k8s.aws/ec2nodeclass");
        nw_json_add_string(labels, "karpenter.k8s.aws/ec2nodeclass", class);
    }
    nw_json_add_item(md, "labels", labels);
    const cJSON *ta = nw_json_get(nw_json_get(tmpl, "metadata"), "annotations");
    cJSON *ann = ta ? nw_json_dup(ta) : nw_json_new_object();
    nw_json_add_string(ann, "karpenter.sh/nodepool-hash-version", "v3");
    nw_json_add_string(ann, "karpenter.sh/nodeclaim-min-values-relaxed", "false");
    nw_json_add_item(md, "annotations", ann);
    const char *uid = nw_json_str(nw_json_get(pool, "metadata"), "uid");
    if (uid) {
        cJSON *own = nw_json_new_object();
        nw_json_add_string(own, "apiVersion", "karpenter.sh/v1");
        nw_json_add_string(own, "kind", "NodePool");
        nw_json_add_string(own, "name", poolname);
        nw_json_add_string(own, "uid", uid);
        nw_json_add_bool(own, "blockOwnerDeletion", 1);
        nw_json_push(nw_json_add_array(md, "ownerReferences"), own);
    }
    nw_json_push(nw_json_add_array(md, "finalizers"), nw_json_new_string(NW_FINALIZER));
    cJSON *spec = nw_json_add_object(nc, "spec");
    nw_json_add_item(spec, "requirements", reqs_json(&c->reqs, rp));
    cJSON *res = nw_json_add_object(spec, "resources");
    nw_json_add_item(res, "requests", nw_snapshot_res_to_json(h->snap, &c->requests));
    const cJSON *ref = nw_json_get(tspec, "nodeClassRef");
    if (ref)
        nw_json_add_item(spec, "nodeClassRef", nw_json_dup(ref));
    static const char *const copy[] = {"taints", "startupTaints", "terminationGracePeriod"};
    for (size_t i = 0; i < sizeof copy / sizeof *copy; i++) {
        const cJSON *v = nw_json_get(tspec, copy[i]);
        if (v)
            nw_json_add_item(spec, copy[i], nw_json_dup(v));
    }
    const char *exp = nw_json_str(tspec, "expireAfter");
    nw_json_add_string(spec, "expireAfter", exp ? exp : "720h");
    return nc;
}
