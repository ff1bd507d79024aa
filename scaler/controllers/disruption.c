/*
 * scaler/controllers/disruption.c — the disruption controller (see disruption.h).
 */
#include "scaler/controllers/disruption.h"
#include "scaler/metrics/kmetrics.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "common/log.h"
#include "scaler/ctl/ctl.h"
#include "scaler/disrupt/disrupt.h"
#include "scaler/controllers/disruption_live.h"
#include "scaler/state/nominations.h"
#include "scaler/state/simsnap.h"

#define POD_EVENT_DEDUPE_NS (10 * NW_NS_PER_SEC)
#define UNSEEN_GRACE_NS (60 * NW_NS_PER_SEC)
#define RECENT_NS (30 * NW_NS_PER_SEC)
#define UNCHANGED_RECHECK_NS (300 * NW_NS_PER_SEC) /* state "changed" at least every 5 min */
#define VIEW_MIN_NS (1 * NW_NS_PER_SEC) /* full ticks at most this often under a change stream */
/* and, with opts.view_duty, no more often than view_duty times the last one's cost, at
 * most VIEW_MAX_GAP_NS apart: a full tick reads the whole cluster, 1-2 s of CPU at 5,000
 * nodes and 100,000 pods, and a stream of pod events must not keep a core busy with them */
#define VIEW_MAX_GAP_NS (30 * NW_NS_PER_SEC)
#define MAX_RECENT 256
#define MAX_NOTED 512

typedef struct {
    nw_disrupt_cmd_t cmd;
    char **repl; /* replacement NodeClaim names (owned) */
    int *seen;
    size_t nrepl;
    int64_t started_mono;
    int waiting_noted;
} inflight_t;

/* A node's pod fingerprint, kept per NodeClaim (d->fps is sorted by NodeClaim name, the
 * order of the state's nodes, so that a look pairs the two in one walk) */
typedef struct {
    char *claim; /* owned: the NodeClaim's name; its node's name follows it in the block */
    const char *node;
    uint64_t fp;
    uint64_t gen; /* the node's pods generation it was taken at (cache.h
                     nw_kube_cache_snap_node_pods_gen); 0: unknown, take it again */
} fp_t;

typedef struct {
    char name[256];
    int64_t mono;
} recent_t;

typedef struct {
    char nodeclaim[256];
    uint64_t hash;
} noted_t;

typedef struct {
    char nodeclaim[256];
    int64_t last; /* epoch ns */
    int mark;     /* seen in the last pass */
} accel_seen_t;

struct nw_disruption {
    nw_ctl_deps_t *deps;
    nw_nodeclaim_t *claims; /* borrowed: replacements are created through it */
    nw_ctl_shared_t *mem;   /* borrowed: nominations */
    nw_disruption_opts_t o;
    nw_kube_recorder_t *rec; /* its own: provisioning bursts must not starve these events */
    int64_t next_pass_mono;
    uint64_t idle_gen; /* cache generation of the last pass that found nothing (0: none) */
    int64_t idle_gen_mono;
    /* the last full tick (tick_skippable): its generation and time, and when the next
     * one is due without a change */
    int viewed;
    uint64_t view_gen;
    int64_t view_mono, wake_mono;
    int64_t view_cost_ns; /* the last full tick's duration (the system's clock) */
    /* the last pass: when, what it cost (the system's clock), whether it found nothing */
    int64_t pass_mono, pass_cost_ns;
    int pass_was_idle;
    /* the last pass was skipped because every budget allowed 0: each pool's counted and
     * disrupting nodes then, so that the periodic re-check of an unchanged cluster only
     * evaluates the budgets again (a schedule window may open), without a look */
    int skipped_for_budgets;
    struct rest_pool {
        char name[256];
        int counted, disrupting;
    } * rest;
    size_t nrest;
    int64_t timer_mono; /* the earliest time-based trigger of the last look (INT64_MAX none) */
    int has_pending;
    nw_disrupt_cmd_t pending;
    int64_t pending_mono;
    inflight_t *fl;
    size_t nfl;
    fp_t *fps;
    size_t nfps;
    uint64_t fps_pods_gen; /* the pods' generation the fingerprints were taken at */
    int fps_taken;
    /* the last light look's state, and the NodePools', NodeClaims' and Nodes' generations it
     * was built at: the next light look at the same generations takes each node's match
     * (pool, Node, labels) from it (nw_disrupt_input_t.reuse) */
    nw_disrupt_state_t *kept;
    uint64_t kept_gen[3];
    recent_t recent[MAX_RECENT];
    size_t nrecent;
    recent_t repl[MAX_RECENT]; /* replacements of finished commands: nominated for a while */
    size_t nrepl;
    noted_t noted[MAX_NOTED];
    size_t nnoted;
    /* metrics */
    _Atomic uint64_t decisions[NW_DIS_NMETHODS][2][NW_DIS_NREASONS]; /* method, action, reason */
    _Atomic uint64_t disrupted[NW_DIS_NMETHODS][NW_DIS_NREASONS];    /* nodes, by method, reason */
    /* GPU-aware disruption: the accelerator classes, and when a pod of its class last ran
     * on each accelerator NodeClaim's node (epoch ns; kept while the NodeClaim exists) */
    nw_disrupt_accel_t accels[NW_GPU_MAX_CLASSES];
    size_t naccels;
    nw_simsnap_dra_ctx_t dra; /* the accels' dra_ud: the policy and the pass's snapshot */
    const char *accel_label_key;
    accel_seen_t *seen;
    size_t nseen, cseen;
    _Atomic uint64_t blocked[NW_DIS_NREASONS];
    _Atomic uint64_t passes, rejected, failed;
};

nw_disruption_t *nw_disruption_ctl_new(nw_ctl_deps_t *deps, nw_nodeclaim_t *claims,
                                       nw_ctl_shared_t *mem, const nw_disruption_opts_t *o,
                                       const char *instance)
{
    nw_disruption_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->deps = deps;
    d->claims = claims;
    d->mem = mem;
    if (instance && !(d->rec = nw_kube_write_recorder_new(deps->kube, "nodewarden", instance))) {
        free(d);
        return NULL;
    }
    if (o)
        d->o = *o;
    if (d->o.poll_ns <= 0)
        d->o.poll_ns = 10 * NW_NS_PER_SEC;
    if (d->o.validation_ns < 0)
        d->o.validation_ns = 0;
    if (d->o.command_timeout_ns <= 0)
        d->o.command_timeout_ns = 600 * NW_NS_PER_SEC;
    /* GPU-aware disruption: every class of the isolation policy (their pools are
     * accelerator capacity), the rules on those with disruption.acceleratorAware */
    const nw_gpu_policy_t *gpu = (const nw_gpu_policy_t *)mem->gpu;
    for (size_t i = 0; gpu && gpu->enabled && i < gpu->nclasses; i++) {
        const nw_accel_class_t *k = &gpu->classes[i];
        d->accels[d->naccels] = nw_accel_of_class(k);
        /* a pod whose DRA claims ask for the class's devices is the class's (the snapshot
         * they are read from is the pass's: set before each pass) */
        d->accels[d->naccels].bit = 1u << i;
        d->accels[d->naccels].dra_classes = nw_simsnap_dra_classes;
        d->accels[d->naccels++].dra_ud = &d->dra;
        d->accel_label_key = gpu->label_key;
    }
    /* Karpenter starts both timeout series at 0 */
    nw_series_add(deps->series, &NW_KMETRICS_DISRUPTION_TIMEOUTS, (const char *[]){"multi"}, 0);
    nw_series_add(deps->series, &NW_KMETRICS_DISRUPTION_TIMEOUTS, (const char *[]){"single"}, 0);
    return d;
}

static void inflight_free(inflight_t *f)
{
    nw_decide_cmd_cleanup(&f->cmd);
    for (size_t i = 0; i < f->nrepl; i++)
        free(f->repl[i]);
    free(f->repl);
    free(f->seen);
}

void nw_disruption_ctl_reset(nw_disruption_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nfl; i++)
        inflight_free(&d->fl[i]);
    free(d->fl);
    d->fl = NULL;
    d->nfl = 0;
    if (d->has_pending)
        nw_decide_cmd_cleanup(&d->pending);
    d->has_pending = 0;
    d->next_pass_mono = 0;
    d->idle_gen = 0;
    d->viewed = 0;
    d->skipped_for_budgets = 0;
    d->nrecent = 0;
    d->nrepl = 0;
    d->nseen = 0; /* another replica may have seen accelerator pods meanwhile */
    nw_candidates_state_free(d->kept);
    d->kept = NULL;
}

void nw_disruption_ctl_free(nw_disruption_t *d)
{
    if (!d)
        return;
    nw_disruption_ctl_reset(d);
    nw_kube_write_recorder_free(d->rec);
    free(d->rest);
    for (size_t i = 0; i < d->nfps; i++)
        free(d->fps[i].claim);
    free(d->fps);
    free(d->seen);
    free(d);
}

/* ---- small helpers ---- */

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
    return h;
}

static void event2(nw_disruption_t *d, const nw_kube_obj_t *nc, const nw_kube_obj_t *node,
                   const char *type, const char *reason, const char *msg)
{
    nw_ctl_deps_t *c = d->deps;
    nw_kube_recorder_t *rec = d->rec ? d->rec : c->rec;
    if (!nw_ctl_may_write(c))
        return;
    if (nc)
        nw_ctl_obj_event_rec(rec, &nw_kube_client_res_nodeclaims, nc, type, reason, msg);
    if (node)
        nw_ctl_obj_event_rec(rec, &nw_kube_client_res_nodes, node, type, reason, msg);
}

static const nw_kube_obj_t *node_of(const nw_kube_snap_t *s, const nw_kube_obj_t *nc)
{
    if (nc && nc->provider_id[0])
        return nw_kube_cache_snap_node_by_provider_id(s, nc->provider_id);
    return NULL;
}

typedef struct {
    const cJSON **v;
    size_t n;
} arr_t;

typedef struct {
    const nw_pod_t **v;
    size_t n;
} podarr_t;

/* Every pod's record (the cache keeps pods as records, api/pod.h). */
static int arr_pods(const nw_kube_snap_t *s, podarr_t *a)
{
    a->n = nw_kube_cache_snap_count(s, NW_KUBE_PODS);
    a->v = calloc(a->n + 1, sizeof *a->v);
    if (!a->v)
        return -1;
    for (size_t i = 0; i < a->n; i++)
        a->v[i] = nw_kube_cache_snap_at(s, NW_KUBE_PODS, i)->pod;
    return 0;
}

typedef struct {
    const nw_node_t **v;
    size_t n;
} nodearr_t;

typedef struct {
    const nw_node_claim_t **v;
    size_t n;
} claimarr_t;

/* Every Node's and every NodeClaim's record (api/node.h). */
static int arr_nodes(const nw_kube_snap_t *s, nodearr_t *nodes, claimarr_t *claims)
{
    nodes->n = nw_kube_cache_snap_count(s, NW_KUBE_NODES);
    claims->n = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    nodes->v = calloc(nodes->n + 1, sizeof *nodes->v);
    claims->v = calloc(claims->n + 1, sizeof *claims->v);
    if (!nodes->v || !claims->v)
        return -1;
    for (size_t i = 0; i < nodes->n; i++)
        nodes->v[i] = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i)->node;
    for (size_t i = 0; i < claims->n; i++)
        claims->v[i] = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i)->nodeclaim;
    return 0;
}

static int arr_kind(const nw_kube_snap_t *s, nw_kube_kind_t k, arr_t *a)
{
    a->n = nw_kube_cache_snap_count(s, k);
    a->v = calloc(a->n + 1, sizeof *a->v);
    if (!a->v)
        return -1;
    for (size_t i = 0; i < a->n; i++)
        a->v[i] = nw_kube_cache_snap_at(s, k, i)->json;
    return 0;
}

/* ---- prices and instance types from the cloud's catalog ---- */

static int64_t pass_mono(void *ud)
{
    return nw_clock_mono(((nw_ctl_deps_t *)ud)->clock);
}

static double catalog_price(void *ud, const char *itype, const char *zone, const char *ct)
{
    nw_ctl_deps_t *c = ud;
    const nw_catalog_t *cat = c->cloud->ops->catalog(c->cloud);
    const nw_itype_t *t = nw_catalog_find(cat, itype);
    if (!t)
        return -1;
    nw_offering_t offs[NW_CATALOG_MAX_OFFERINGS];
    int n = nw_catalog_offerings(t, NULL, 0, offs, NW_CATALOG_MAX_OFFERINGS);
    for (int i = 0; i < n; i++)
        if (strcmp(offs[i].zone, zone) == 0 && strcmp(offs[i].capacity_type, ct) == 0 &&
            offs[i].price > 0)
            return offs[i].price;
    if (strcmp(ct, "on-demand") == 0 && t->od_price > 0)
        return t->od_price;
    return -1;
}

/* ---- the view of one tick ---- */

typedef struct {
    arr_t pools, pdbs, dss;
    nodearr_t nodes;
    claimarr_t claims;
    podarr_t pods;
    const char **incmd;
    size_t nincmd;
    const char **nominated;
    size_t nnominated;
    nw_disrupt_input_t in;
    nw_disruption_live_t live;
    nw_disrupt_state_t *st;
    const nw_kube_snap_t *snap; /* the tick's (pods_on) */
} view_t;

/* The pods bound to a node, from the cache's index (nw_disrupt_input_t.pods_on). */
static size_t view_pods_on(void *ud, const char *node, const nw_pod_t ***out)
{
    const view_t *v = ud;
    const nw_kube_obj_t *const *on;
    size_t n = nw_kube_cache_snap_pods_on_node(v->snap, node, &on);
    *out = NULL;
    if (!n)
        return 0;
    const nw_pod_t **a = calloc(n, sizeof *a);
    if (!a)
        return (size_t)-1;
    for (size_t i = 0; i < n; i++)
        a[i] = on[i]->pod;
    *out = a;
    return n;
}

static void view_free(view_t *v)
{
    nw_candidates_state_free(v->st);
    free(v->pools.v);
    free(v->claims.v);
    free(v->nodes.v);
    free(v->pods.v);
    free(v->pdbs.v);
    free(v->dss.v);
    free(v->incmd);
    free(v->nominated);
    memset(v, 0, sizeof *v);
}

/* ---- GPU-aware disruption's memory ---- */

static accel_seen_t *seen_find(const nw_disruption_t *d, const char *nodeclaim)
{
    for (size_t i = 0; i < d->nseen; i++)
        if (strcmp(d->seen[i].nodeclaim, nodeclaim) == 0)
            return &d->seen[i];
    return NULL;
}

/* when a pod of its class last ran on the NodeClaim's node, as remembered; 0 unknown */
static int64_t accel_last_used(void *ud, const char *nodeclaim)
{
    const accel_seen_t *e = seen_find(ud, nodeclaim);
    return e ? e->last : 0;
}

/* After a state build: an accelerator node running a pod of its class was used now; one
 * seen for the first time without one keeps the state's own estimate (its last pod
 * event, else its initialization: never earlier than the truth); NodeClaims gone are
 * forgotten. Memory that cannot grow is skipped (the estimate then serves). */
static void accel_remember(nw_disruption_t *d, const nw_disrupt_state_t *st)
{
    for (size_t i = 0; i < d->nseen; i++)
        d->seen[i].mark = 0;
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        if (n->accel < 0)
            continue;
        accel_seen_t *e = seen_find(d, n->name);
        if (!e && (n->accel_pods > 0 || n->accel_since)) {
            if (d->nseen == d->cseen) {
                size_t nc = d->cseen ? 2 * d->cseen : 16;
                accel_seen_t *v = realloc(d->seen, nc * sizeof *v);
                if (!v)
                    continue;
                d->seen = v;
                d->cseen = nc;
            }
            e = &d->seen[d->nseen++];
            memset(e, 0, sizeof *e);
            snprintf(e->nodeclaim, sizeof e->nodeclaim, "%s", n->name);
            e->last = n->accel_since;
        }
        if (!e)
            continue;
        e->mark = 1;
        if (n->accel_pods > 0)
            e->last = st->in.now;
    }
    size_t k = 0;
    for (size_t i = 0; i < d->nseen; i++)
        if (d->seen[i].mark)
            d->seen[k++] = d->seen[i];
    d->nseen = k;
}

/* The view of a tick: light (disrupt.h nw_disrupt_input_t.light: no pods but the
 * accelerator nodes', enough for the markers, the budgets and the timers) or whole (a
 * pass's candidates); view_whole turns a light one into a whole one. */
static int view_build(nw_disruption_t *d, const nw_kube_snap_t *s, view_t *v, bool light)
{
    nw_ctl_deps_t *c = d->deps;
    memset(v, 0, sizeof *v);
    v->snap = s;
    if (arr_kind(s, NW_KUBE_NODEPOOLS, &v->pools) || arr_nodes(s, &v->nodes, &v->claims) ||
        (!light && arr_pods(s, &v->pods)) || arr_kind(s, NW_KUBE_PDBS, &v->pdbs) ||
        arr_kind(s, NW_KUBE_DAEMONSETS, &v->dss))
        goto fail;
    size_t cap = d->nrecent + 1;
    for (size_t i = 0; i < d->nfl; i++)
        cap += d->fl[i].cmd.ncandidates;
    v->incmd = calloc(cap, sizeof *v->incmd);
    if (!v->incmd)
        goto fail;
    for (size_t i = 0; i < d->nfl; i++)
        for (size_t k = 0; k < d->fl[i].cmd.ncandidates; k++)
            v->incmd[v->nincmd++] = d->fl[i].cmd.candidates[k];
    int64_t mono = nw_clock_mono(c->clock);
    for (size_t i = 0; i < d->nrecent; i++)
        if (mono - d->recent[i].mono < RECENT_NS)
            v->incmd[v->nincmd++] = d->recent[i].name;
    /* the nodes of replacements: their pods are on the way (Karpenter nominates them) */
    v->nominated = calloc(d->nrepl + v->claims.n + 1, sizeof *v->nominated);
    if (!v->nominated)
        goto fail;
    /* nodes the provisioner nominated pods to (in flight, or in the last 20 s) */
    for (size_t i = 0;
         nw_nominations_any(d->mem->noms) && i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
         i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        const char *nn = nc->nodeclaim->node_name;
        if (nn && *nn &&
            (nw_simsnap_is_nominated(d->mem->noms, s, nc->name, mono,
                                     nw_ctl_nomination_window(d->mem)) ||
             nw_simsnap_is_nominated(d->mem->noms, s, nn, mono, nw_ctl_nomination_window(d->mem))))
            v->nominated[v->nnominated++] = nn;
    }
    for (size_t i = 0; i < d->nrepl; i++) {
        const nw_kube_obj_t *nc =
            nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, d->repl[i].name);
        const char *nn = nc && nc->nodeclaim->node_name[0] ? nc->nodeclaim->node_name : NULL;
        if (nn && mono - d->repl[i].mono < nw_ctl_nomination_window(d->mem))
            v->nominated[v->nnominated++] = nn;
    }
    d->dra = (nw_simsnap_dra_ctx_t){d->mem->gpu, s}; /* the accels' DRA lookups */
    uint64_t gens[3] = {nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODEPOOLS),
                        nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODECLAIMS),
                        nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODES)};
    bool reuse = light && d->kept && memcmp(gens, d->kept_gen, sizeof gens) == 0;
    nw_disrupt_input_t in = {
        .reuse = reuse ? d->kept : NULL,
        .nodepools = v->pools.v,
        .nnodepools = v->pools.n,
        .nodeclaims = v->claims.v,
        .nnodeclaims = v->claims.n,
        .nodes = v->nodes.v,
        .nnodes = v->nodes.n,
        .pods = v->pods.v,
        .npods = v->pods.n,
        .pods_on = view_pods_on,
        .pods_on_ud = v,
        .pdbs = v->pdbs.v,
        .npdbs = v->pdbs.n,
        .now = nw_clock_now(c->clock),
        .in_command = v->incmd,
        .nin_command = v->nincmd,
        .nominated = v->nominated,
        .nnominated = v->nnominated,
        .price = catalog_price,
        .price_ud = c,
        .spot_to_spot = d->o.spot_to_spot != 0,
        .mono = pass_mono,
        .mono_ud = c,
        .multi_timeout = NW_DIS_MULTI_TIMEOUT_NS,
        .single_timeout = NW_DIS_SINGLE_TIMEOUT_NS,
        .accel_label_key = d->accel_label_key,
        .accels = d->accels,
        .naccels = d->naccels,
        .accel_last_used = accel_last_used,
        .accel_ud = d,
        .yield = c->batch_waiting,
        .yield_ud = c->batch_waiting_ud,
        .light = light,
    };
    v->in = in;
    nw_disruption_live_t live = {c, d->claims, d->mem, s, in.now};
    v->live = live;
    nw_err_t err = {0};
    if (nw_candidates_state_build(&v->in, &v->st, &err) != NW_OK)
        goto fail;
    v->in.reuse = NULL;
    accel_remember(d, v->st);
    return 0;
fail:
    view_free(v);
    return -1;
}

/* A light view's state is kept for the next light look (taken from the view, which then
 * frees the rest), with the generations it was built at. */
static void keep_light(nw_disruption_t *d, const nw_kube_snap_t *s, view_t *v)
{
    if (!v->in.light || !v->st)
        return;
    nw_candidates_state_free(d->kept);
    d->kept = v->st;
    v->st = NULL;
    d->kept_gen[0] = nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODEPOOLS);
    d->kept_gen[1] = nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODECLAIMS);
    d->kept_gen[2] = nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODES);
}

static int view_whole(nw_disruption_t *d, const nw_kube_snap_t *s, view_t *v)
{
    if (!v->in.light)
        return 0;
    view_free(v);
    return view_build(d, s, v, false);
}

/* ---- writes ---- */

typedef struct {
    const char *type, *status, *reason, *msg;
    int64_t now;
    int remove;
    int64_t pod_event; /* > 0: set status.lastPodEventTime */
} condw_t;

static int mutate_cond(cJSON *obj, void *ud)
{
    const condw_t *w = ud;
    if (w->pod_event > 0) {
        cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
        if (!cJSON_IsObject(st))
            return 1;
        char ts[40];
        nw_clock_time_format(w->pod_event, ts, sizeof ts);
        const char *cur = nw_json_str(st, "lastPodEventTime");
        if (cur && strcmp(cur, ts) == 0)
            return 1;
        cJSON_DeleteItemFromObjectCaseSensitive(st, "lastPodEventTime");
        cJSON_AddStringToObject(st, "lastPodEventTime", ts);
        return 0;
    }
    const char *cur = nw_json_condition(obj, w->type);
    if (w->remove) {
        if (!cur)
            return 1;
        cJSON *conds = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(obj, "status"), "conditions");
        for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--) {
            const char *t = nw_json_str(cJSON_GetArrayItem(conds, i), "type");
            if (t && strcmp(t, w->type) == 0)
                cJSON_DeleteItemFromArray(conds, i);
        }
        return 0;
    }
    if (cur && strcmp(cur, w->status) == 0) {
        const cJSON *cd;
        cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(obj, "status"), "conditions"))
        {
            const char *t = nw_json_str(cd, "type"), *r = nw_json_str(cd, "reason");
            if (t && strcmp(t, w->type) == 0 && r && strcmp(r, w->reason) == 0)
                return 1;
        }
    }
    if (nw_ctl_set_condition(obj, w->type, w->status, w->reason, w->msg, w->now) != NW_OK)
        return 1; /* out of memory: no write this time */
    return 0;
}

static NW_MUST_USE nw_rc_t claim_write(nw_disruption_t *d, const char *name, condw_t *w)
{
    nw_ctl_deps_t *c = d->deps;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, name, 1,
                                            mutate_cond, w, 5, NULL, &err);
    if (rc != NW_OK && rc != NW_ENOTFOUND)
        nw_log_warn("disruption", "cannot update the NodeClaim status", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
    return rc;
}

/* The same change made from the cached NodeClaim, without reading it first: a merge patch
 * of its status's conditions that holds only if the NodeClaim is still the version the
 * cache shows (metadata.resourceVersion: a newer one is a 409, and the next tick decides
 * again from the newer one). */
static cJSON *claim_conditions(const nw_node_claim_t *rec)
{
    cJSON *o = cJSON_CreateObject(), *conds = nw_node_meta_conditions_json(&rec->m);
    cJSON *meta = o ? cJSON_AddObjectToObject(o, "metadata") : NULL,
          *st = o ? cJSON_AddObjectToObject(o, "status") : NULL;
    if (!meta || !st || !conds ||
        (rec->m.generation &&
         !cJSON_AddNumberToObject(meta, "generation", (double)rec->m.generation))) {
        cJSON_Delete(conds);
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToObject(st, "conditions", conds);
    return o;
}

static void claim_patch(nw_disruption_t *d, const nw_node_claim_t *rec, const char *name,
                        condw_t *w)
{
    nw_ctl_deps_t *c = d->deps;
    const char *rv = rec->m.rv[0] ? rec->m.rv : NULL;
    /* the conditions as the cache shows them (the record keeps all their fields), with
     * metadata.generation for their observedGeneration */
    cJSON *copy = rv ? claim_conditions(rec) : NULL;
    if (!copy || mutate_cond(copy, w) != 0) {
        cJSON_Delete(copy);
        if (!rv) /* no version to hold it to: read it back and write */
            (void)claim_write(d, name, w);
        return;
    }
    cJSON *patch = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(patch, "metadata"),
          *st = cJSON_AddObjectToObject(patch, "status");
    cJSON *conds = cJSON_DetachItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(copy, "status"), "conditions");
    char *body = NULL;
    if (meta && st && cJSON_AddStringToObject(meta, "resourceVersion", rv)) {
        cJSON_AddItemToObject(st, "conditions", conds ? conds : cJSON_CreateArray());
        conds = NULL;
        body = cJSON_PrintUnformatted(patch);
    }
    cJSON_Delete(conds);
    cJSON_Delete(patch);
    cJSON_Delete(copy);
    if (!body)
        return; /* out of memory: the next tick tries again */
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_write_patch(c->kube, &nw_kube_client_res_nodeclaims, NULL, name,
                                     NW_KUBE_PATCH_MERGE, body, 1, NULL, &err);
    cJSON_free(body);
    if (rc != NW_OK && rc != NW_ENOTFOUND && rc != NW_ECONFLICT)
        nw_log_warn("disruption", "cannot update the NodeClaim status", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
}

static int mutate_taint(cJSON *node, void *ud)
{
    return nw_ctl_disrupted_taint(node, *(const int *)ud) == 1 ? 0 : 1;
}

static NW_MUST_USE nw_rc_t node_taint(nw_disruption_t *d, const char *node, int add)
{
    nw_ctl_deps_t *c = d->deps;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodes, NULL, node, 0,
                                            mutate_taint, &add, 5, NULL, &err);
    if (rc != NW_OK && rc != NW_ENOTFOUND)
        nw_log_warn("disruption", add ? "cannot taint the node" : "cannot untaint the node",
                    NW_LS("node", node), NW_LS("error", err.msg));
    return rc;
}

static bool held(const nw_disruption_t *d, const char *nc)
{
    for (size_t i = 0; i < d->nrecent; i++)
        if (strcmp(d->recent[i].name, nc) == 0)
            return true; /* deleted by us a moment ago; the cache may not show it yet */
    for (size_t i = 0; i < d->nfl; i++)
        for (size_t k = 0; k < d->fl[i].cmd.ncandidates; k++)
            if (strcmp(d->fl[i].cmd.candidates[k], nc) == 0)
                return true;
    return false;
}

/* ---- staged replacement of accelerator nodes ---- */

/* A replacement whose class's pod is Running and Ready has done its step: its annotation
 * goes (the next step may start); a pool whose replacement missed its deadline gets the
 * AcceleratorRolloutBlocked condition (True) and a Warning event, and the condition turns
 * False with a Normal event once the rollout can go on. */
static void rollout_upkeep(nw_disruption_t *d, const nw_kube_snap_t *s, const view_t *v)
{
    nw_ctl_deps_t *c = d->deps;
    const nw_disrupt_state_t *st = v->st;
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        if (!n->rollout_of || !n->rollout_done || !nw_ctl_may_write(c))
            continue;
        char body[512];
        snprintf(body, sizeof body, "{\"metadata\":{\"annotations\":{\"%s\":null}}}",
                 NW_DIS_ROLLOUT_ANNOTATION);
        nw_err_t err = {0};
        nw_rc_t rc = nw_kube_write_patch(c->kube, &nw_kube_client_res_nodeclaims, NULL, n->name,
                                         NW_KUBE_PATCH_MERGE, body, 0, NULL, &err);
        if (rc != NW_OK) {
            if (rc != NW_ENOTFOUND)
                nw_log_warn("disruption", "cannot mark a staged replacement done",
                            NW_LS("nodeclaim", n->name), NW_LS("error", err.msg));
            continue;
        }
        char msg[512];
        snprintf(msg, sizeof msg,
                 "Staged replacement done: a pod of the %s accelerator class is Running and "
                 "Ready on the replacement for %s",
                 st->in.accels[n->rollout_class].name, n->rollout_of);
        nw_log_info("disruption", "staged replacement done", NW_LS("nodeclaim", n->name),
                    NW_LS("replaced", n->rollout_of));
        const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, n->name);
        event2(d, nc, NULL, "Normal", "AcceleratorRolloutStepDone", msg);
    }
    for (size_t k = 0; k < st->npools; k++) {
        const nw_disrupt_pool_t *p = &st->pools[k];
        bool blocked = p->rollout_class >= 0 && p->rollout_blocked;
        const char *cur = nw_json_condition(p->obj, NW_DIS_ROLLOUT_CONDITION);
        bool is_true = cur && strcmp(cur, "True") == 0;
        if (blocked == is_true || (!blocked && !cur) || !nw_ctl_may_write(c))
            continue;
        condw_t w = {NW_DIS_ROLLOUT_CONDITION,
                     blocked ? "True" : "False",
                     blocked ? "ReplacementNotReady" : "RolloutProceeding",
                     blocked ? p->rollout_why : "",
                     v->in.now,
                     0,
                     0};
        nw_err_t err = {0};
        nw_rc_t rc = nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodepools, NULL,
                                                p->name, 1, mutate_cond, &w, 5, NULL, &err);
        if (rc != NW_OK) {
            if (rc != NW_ENOTFOUND)
                nw_log_warn("disruption", "cannot set the NodePool's rollout condition",
                            NW_LS("nodepool", p->name), NW_LS("error", err.msg));
            continue;
        }
        if (blocked)
            nw_log_warn("disruption", "staged accelerator rollout stopped",
                        NW_LS("nodepool", p->name), NW_LS("reason", p->rollout_why));
        else
            nw_log_info("disruption", "staged accelerator rollout resumed",
                        NW_LS("nodepool", p->name));
        nw_ctl_event(c, &nw_kube_client_res_nodepools, p->obj, blocked ? "Warning" : "Normal",
                     blocked ? NW_DIS_ROLLOUT_CONDITION : "AcceleratorRolloutResumed",
                     blocked ? p->rollout_why
                             : "Staged replacement of accelerator nodes goes on: no replacement "
                               "is past its deadline");
    }
}

/* ---- markers: lastPodEventTime and Consolidatable ---- */

static uint64_t pods_fp(const nw_kube_snap_t *s, const char *node)
{
    const nw_kube_obj_t *const *on;
    size_t n = nw_kube_cache_snap_pods_on_node(s, node, &on);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        const nw_pod_t *p = on[i]->pod;
        if (p->terminating || nw_pod_is_terminal(p))
            continue;
        if (!nw_pod_owned_by(p, "DaemonSet"))
            h = fnv(h, on[i]->uid);
    }
    return h;
}

/* A fingerprint entry for the NodeClaim and its node (NULL on out of memory). */
static bool fp_new(fp_t *e, const char *claim, const char *node, uint64_t fp, uint64_t gen)
{
    size_t lc = strlen(claim) + 1, ln = strlen(node) + 1;
    char *b = malloc(lc + ln);
    if (!b)
        return false;
    memcpy(b, claim, lc);
    memcpy(b + lc, node, ln);
    *e = (fp_t){b, b + lc, fp, gen}; /* e owns b */
    // cppcheck-suppress memleak
    return true;
}

/* status.lastPodEventTime by a merge patch of the status subresource: no GET, and no
 * conflict with a writer of other fields (kubernetes-sigs/karpenter
 * pkg/controllers/nodeclaim/podevents patches it the same way) */
static void pod_event_write(nw_disruption_t *d, const char *name, int64_t now)
{
    nw_ctl_deps_t *c = d->deps;
    char ts[40], body[96];
    nw_clock_time_format(now, ts, sizeof ts);
    snprintf(body, sizeof body, "{\"status\":{\"lastPodEventTime\":\"%s\"}}", ts);
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_write_patch(c->kube, &nw_kube_client_res_nodeclaims, NULL, name,
                                     NW_KUBE_PATCH_MERGE, body, 1, NULL, &err);
    if (rc != NW_OK && rc != NW_ENOTFOUND)
        nw_log_warn("disruption", "cannot update the NodeClaim status", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
}

/* Before one more of a look's writes: has a provisioning batch come to wait? The writes
 * share the client's rate (200 a second): after a churn that changed the pods of thousands
 * of nodes, a look's lastPodEventTime writes take seconds, and the batch is not held behind
 * them (asked at most every 20 ms of the system's monotonic clock: each question takes a
 * snapshot). */
#define MARKERS_ASK_NS (20 * NW_NS_PER_MS)

static bool markers_stop(nw_disruption_t *d, int64_t *asked)
{
    nw_ctl_deps_t *c = d->deps;
    if (!c->batch_waiting)
        return false;
    int64_t t = nw_clock_mono(nw_clock_system());
    if (*asked && t - *asked < MARKERS_ASK_NS)
        return false;
    *asked = t;
    return c->batch_waiting(c->batch_waiting_ud);
}

/* The old fingerprint entries paired with the state's nodes (both sorted by NodeClaim
 * name): old[i] the entry of st->nodes[i]'s NodeClaim or NULL; ask[] the nodes whose pods
 * generation the look needs (first seen, or a pod changed somewhere), at[i] their index in
 * it or -1. */
static void fps_pair(const nw_disruption_t *d, const nw_disrupt_state_t *st, bool pods_same,
                     fp_t **old, const char **ask, int *at, size_t *nask)
{
    size_t j = 0;
    *nask = 0;
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        int r = 1;
        while (j < d->nfps && (r = strcmp(d->fps[j].claim, n->name)) < 0)
            j++;
        old[i] = j < d->nfps && r == 0 ? &d->fps[j] : NULL;
        bool known = old[i] && n->node_name[0] && strcmp(old[i]->node, n->node_name) == 0;
        at[i] = -1;
        if (!n->deleting && n->node_name[0] && (!known || !pods_same)) {
            at[i] = (int)*nask;
            ask[(*nask)++] = n->node_name;
        }
    }
}

/* One node's fingerprint at a look: into *out (moved from o, or new) unless out of
 * memory; 1 when *out was filled. A changed pod set is written to the NodeClaim's
 * lastPodEventTime; *stopped when a provisioning batch came to wait first (o kept as is). */
static int fp_look(nw_disruption_t *d, const nw_kube_snap_t *s, const nw_disrupt_node_t *n, fp_t *o,
                   bool pods_same, uint64_t pg, int64_t now, int64_t *asked, bool *stopped,
                   fp_t *out)
{
    const fp_t *known = o && strcmp(o->node, n->node_name) == 0 ? o : NULL;
    bool dedupe_ok = !n->last_pod_event || now - n->last_pod_event >= POD_EVENT_DEDUPE_NS;
    /* a pod changed somewhere: only the nodes whose pods changed since their fingerprint
     * was taken need it again (the cache keeps each node's generation) */
    if (known && (pods_same || (known->gen && known->gen == pg))) {
        *out = *o;
        o->claim = NULL;
        return 1;
    }
    uint64_t fp = pods_fp(s, n->node_name);
    if (dedupe_ok && known && known->fp != fp && (*stopped = markers_stop(d, asked))) {
        *out = *o;
        o->claim = NULL;
        return 1;
    }
    uint64_t g = pg == UINT64_MAX ? 0 : pg;
    if (!known) /* a node seen for the first time: no pod event (out of memory: the next
                   look sees it for the first time again) */
        return fp_new(out, n->name, n->node_name, fp, g) ? 1 : 0;
    bool changed = known->fp != fp;
    *out = *o;
    o->claim = NULL;
    out->fp = fp;
    out->gen = g;
    if (changed && dedupe_ok)
        pod_event_write(d, n->name, now); /* a failed write is made by a later change */
    return 1;
}

/* false when it stopped early for a provisioning batch (the next tick looks again) */
static bool markers(nw_disruption_t *d, const nw_kube_snap_t *s, const view_t *v)
{
    nw_ctl_deps_t *c = d->deps;
    const nw_disrupt_state_t *st = v->st;
    int64_t now = v->in.now;
    /* no pod changed since the fingerprints were taken: only new nodes need one */
    uint64_t pods_gen = nw_kube_cache_snap_kind_generation(s, NW_KUBE_PODS);
    bool pods_same = d->fps_taken && d->fps_pods_gen == pods_gen;
    size_t nn = st->nnodes, nf = 0, nask = 0;
    fp_t *nfps = calloc(nn + 1, sizeof *nfps), **old = calloc(nn + 1, sizeof *old);
    const char **ask = calloc(nn + 1, sizeof *ask);
    int *at = calloc(nn + 1, sizeof *at);
    uint64_t *gens = calloc(nn + 1, sizeof *gens);
    if (!nfps || !old || !ask || !at || !gens) { /* out of memory: the next tick looks again */
        free(nfps);
        free(old);
        free(ask);
        free(at);
        free(gens);
        return false;
    }
    fps_pair(d, st, pods_same, old, ask, at, &nask);
    /* the nodes' pods generations under one take of the cache mutex */
    if (nask)
        nw_kube_cache_snap_node_pods_gens(s, ask, nask, gens);
    bool stopped = false;
    int64_t asked = 0;
    for (size_t i = 0; i < nn; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        fp_t *o = old[i];
        /* not looked at (stopped, not writing, a node being deleted or none yet): the
         * fingerprint stays as it was */
        if (stopped || !nw_ctl_may_write(c) || n->deleting || !n->node_name[0]) {
            if (o) {
                nfps[nf++] = *o;
                o->claim = NULL;
            }
            continue;
        }
        uint64_t pg = at[i] >= 0 ? gens[at[i]] : 0;
        nf += fp_look(d, s, n, o, pods_same, pg, now, &asked, &stopped, &nfps[nf]);
        if (stopped)
            continue; /* this node and the rest at the next look */
        if (n->pool < 0 || !n->initialized)
            continue;
        const nw_node_cond_t *cc = nw_node_meta_condition(&n->nodeclaim->m, "Consolidatable");
        const char *cur = cc ? cc->status_name : NULL;
        int want = n->consolidatable;
        bool set = want && (!cur || strcmp(cur, "True") != 0), unset = !want && cur;
        if ((set || unset) && (stopped = markers_stop(d, &asked)))
            continue;
        if (set) {
            condw_t w = {"Consolidatable", "True", "Consolidatable", "", now, 0, 0};
            /* condition writes are retried by the next tick when they fail */
            claim_patch(d, n->nodeclaim, n->name, &w);
        } else if (unset) {
            condw_t w = {"Consolidatable", NULL, NULL, NULL, now, 1, 0};
            claim_patch(d, n->nodeclaim, n->name, &w);
        }
    }
    /* the entries of NodeClaims gone (or whose node changed) are dropped */
    for (size_t j = 0; j < d->nfps; j++)
        free(d->fps[j].claim);
    free(d->fps);
    d->fps = nfps;
    d->nfps = nf;
    free(old);
    free(ask);
    free(at);
    free(gens);
    /* stopped early: the nodes not looked at are looked at again, whatever the pods do */
    if (nw_ctl_may_write(c) && !stopped) {
        d->fps_pods_gen = pods_gen;
        d->fps_taken = 1;
    }
    return !stopped;
}

/* ---- crash cleanup ---- */

static void cleanup(nw_disruption_t *d, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = d->deps;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS) && nw_ctl_may_write(c);
         i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || held(d, nc->name))
            continue;
        const nw_kube_obj_t *node = node_of(s, nc);
        if (node && !node->terminating && nw_ctl_has_disrupted_taint(node->node)) {
            nw_log_info("disruption", "removing a leftover disrupted taint",
                        NW_LS("node", node->name), NW_LS("nodeclaim", nc->name));
            /* a taint left behind is removed by the next tick */
            (void)node_taint(d, node->name, 0);
        }
        if (nw_node_meta_condition(&nc->nodeclaim->m, "DisruptionReason")) {
            condw_t w = {"DisruptionReason", NULL, NULL, NULL, 0, 1, 0};
            claim_patch(d, nc->nodeclaim, nc->name, &w);
        }
    }
}

/* ---- commands ---- */

static void recent_add(nw_disruption_t *d, const char *name, int64_t mono)
{
    if (d->nrecent == MAX_RECENT) {
        memmove(d->recent, d->recent + 1, (MAX_RECENT - 1) * sizeof *d->recent);
        d->nrecent--;
    }
    snprintf(d->recent[d->nrecent].name, sizeof d->recent[d->nrecent].name, "%s", name);
    d->recent[d->nrecent++].mono = mono;
}

static void untaint_all(nw_disruption_t *d, const nw_kube_snap_t *s, const nw_disrupt_cmd_t *cmd)
{
    for (size_t i = 0; i < cmd->ncandidates; i++) {
        const nw_kube_obj_t *nc =
            nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, cmd->candidates[i]);
        const nw_kube_obj_t *node = node_of(s, nc);
        if (node)
            (void)node_taint(d, node->name, 0);
        if (nc) {
            condw_t w = {"DisruptionReason", NULL, NULL, NULL, 0, 1, 0};
            (void)claim_write(d, nc->name, &w);
        }
    }
}

/* karpenter_voluntary_disruption_decisions_total{decision,reason,consolidation_type}
 * (kubernetes-sigs/karpenter pkg/controllers/disruption/queue.go) */
static const char *consolidation_type(nw_disrupt_method_t m);

static void count_decision(nw_ctl_deps_t *c, const nw_disrupt_state_t *st,
                           const nw_disrupt_cmd_t *cmd)
{
    char r[32];
    nw_kmetrics_resource_type(nw_budget_reason_str(cmd->reason), r, sizeof r);
    const char *ct = consolidation_type(cmd->method);
    const char *v[] = {nw_decide_action_str(cmd->action), r, ct};
    nw_series_add(c->series, &NW_KMETRICS_DISRUPTION_DECISIONS, v, 1);
    /* ..._decisions_by_nodepool_total: once for each NodePool among the candidates */
    for (size_t i = 0; i < cmd->ncandidates; i++) {
        const nw_disrupt_node_t *n = nw_candidates_state_node(st, cmd->candidates[i]);
        const char *pool = n && n->pool >= 0 ? st->pools[n->pool].name : "";
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) {
            const nw_disrupt_node_t *o = nw_candidates_state_node(st, cmd->candidates[k]);
            seen = strcmp(o && o->pool >= 0 ? st->pools[o->pool].name : "", pool) == 0;
        }
        if (!seen) {
            const char *pv[] = {pool, nw_decide_action_str(cmd->action), r, ct};
            nw_series_add(c->series, &NW_KMETRICS_DISRUPTION_DECISIONS_BY_NODEPOOL, pv, 1);
        }
    }
}

static const char *consolidation_type(nw_disrupt_method_t m)
{
    return m == NW_DIS_EMPTINESS ? "empty"
           : m == NW_DIS_MULTI   ? "multi"
           : m == NW_DIS_SINGLE  ? "single"
                                 : "";
}

/* karpenter_voluntary_disruption_decision_evaluation_duration_seconds{reason,
 * consolidation_type} of each method a pass ran (Karpenter's controller.go measures
 * every method's disrupt call) */
static void count_evaluations(nw_ctl_deps_t *c, const nw_disrupt_cmd_t *cmd)
{
    static const char *const reasons[] = {
        "", "empty", "drifted", "underutilized", "underutilized", "underutilized"};
    _Static_assert(sizeof reasons / sizeof reasons[0] == NW_DIS_NMETHODS, "a reason per method");
    for (int m = NW_DIS_EMPTINESS; m < NW_DIS_NMETHODS; m++)
        if (cmd->elapsed[m] >= 0) {
            const char *v[] = {reasons[m], consolidation_type((nw_disrupt_method_t)m)};
            nw_series_observe(c->series, &NW_KMETRICS_DISRUPTION_EVAL_DURATION, v,
                              (double)cmd->elapsed[m] / 1e9);
        }
}

/* karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type}
 * (kubernetes-sigs/karpenter pkg/controllers/disruption/{multi,single}nodeconsolidation.go) */
static void count_timeouts(nw_ctl_deps_t *c, const nw_disrupt_cmd_t *cmd)
{
    if (cmd->multi_timed_out) {
        nw_series_add(c->series, &NW_KMETRICS_DISRUPTION_TIMEOUTS, (const char *[]){"multi"}, 1);
        nw_log_info("disruption",
                    cmd->method == NW_DIS_MULTI
                        ? "stopping multi-node consolidation after timeout, returning the last "
                          "valid command"
                        : "multi-node consolidation found nothing before its timeout",
                    NW_LI("evaluated", cmd->multi_evaluated),
                    NW_LI("timeoutSeconds", NW_DIS_MULTI_TIMEOUT_NS / NW_NS_PER_SEC));
    }
    if (cmd->single_timed_out) {
        nw_series_add(c->series, &NW_KMETRICS_DISRUPTION_TIMEOUTS, (const char *[]){"single"}, 1);
        nw_log_info("disruption", "abandoning single-node consolidation after timeout",
                    NW_LI("evaluated", cmd->single_evaluated),
                    NW_LI("timeoutSeconds", NW_DIS_SINGLE_TIMEOUT_NS / NW_NS_PER_SEC));
    }
}

/* karpenter_nodepools_allowed_disruptions{nodepool,reason} and
 * karpenter_voluntary_disruption_eligible_nodes{reason} of a pass's state (Karpenter's
 * helpers.go BuildDisruptionBudgetMapping and controller.go; no active budget: MaxInt32) */
static void pool_budget_gauges(nw_ctl_deps_t *c, const nw_disrupt_state_t *st)
{
    for (size_t p = 0; p < st->npools; p++)
        for (int r = 0; r < NW_DIS_NREASONS; r++) {
            const char *v[] = {st->pools[p].name, nw_budget_reason_str((nw_disrupt_reason_t)r)};
            int a = st->pools[p].allowed[r];
            nw_series_set(c->series, &NW_KMETRICS_NODEPOOLS_ALLOWED_DISRUPTIONS, v,
                          a == NW_DIS_UNLIMITED ? 2147483647.0 : (double)a);
            nw_series_set(c->series, &NW_KMETRICS_NODEPOOLS_NODES_CONSUMING_BUDGETS, v,
                          (double)st->pools[p].disrupting);
        }
}

static void budget_gauges(nw_ctl_deps_t *c, const nw_disrupt_state_t *st)
{
    pool_budget_gauges(c, st);
    int eligible[NW_DIS_NREASONS] = {0};
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        if (!n->candidate)
            continue;
        eligible[NW_DIS_UNDERUTILIZED]++;
        eligible[NW_DIS_EMPTY] += n->empty;
        eligible[NW_DIS_DRIFTED] += n->drifted;
    }
    for (int r = 0; r < NW_DIS_NREASONS; r++) {
        char lr[32];
        nw_kmetrics_resource_type(nw_budget_reason_str((nw_disrupt_reason_t)r), lr, sizeof lr);
        const char *v[] = {lr};
        nw_series_set(c->series, &NW_KMETRICS_DISRUPTION_ELIGIBLE, v, eligible[r]);
    }
}

static void delete_candidates(nw_disruption_t *d, const nw_kube_snap_t *s,
                              const nw_disrupt_cmd_t *cmd)
{
    nw_ctl_deps_t *c = d->deps;
    int64_t mono = nw_clock_mono(c->clock);
    for (size_t i = 0; i < cmd->ncandidates && nw_ctl_may_write(c); i++) {
        const char *name = cmd->candidates[i];
        nw_ctl_fault(c, "disruption-deleting", name); /* crash point (scaler/ctl/ctl.h) */
        nw_err_t err = {0};
        nw_rc_t rc = NW_OK;
        for (int attempt = 0; attempt < 3; attempt++) {
            nw_err_clear(&err);
            if ((rc = nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, name,
                                           NULL, NULL, &err)) == NW_OK)
                break;
        }
        if (rc != NW_OK) {
            nw_log_warn("disruption", "cannot delete the NodeClaim", NW_LS("nodeclaim", name),
                        NW_LS("error", err.msg));
            continue;
        }
        recent_add(d, name, mono);
        atomic_fetch_add(&d->disrupted[cmd->method][cmd->reason], 1);
        const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, name);
        char r[32];
        nw_kmetrics_resource_type(nw_budget_reason_str(cmd->reason), r, sizeof r); /* lower case */
        if (nc)
            nw_kmetrics_disrupted_of(c->series, r, &nc->nodeclaim->m);
        else
            nw_kmetrics_disrupted(c->series, r, NULL);
        char msg[600];
        snprintf(msg, sizeof msg, "Disrupting NodeClaim: %s/%s (%s)",
                 nw_budget_reason_str(cmd->reason),
                 cmd->action == NW_DIS_REPLACE ? "Replace" : "Delete",
                 nw_decide_method_str(cmd->method));
        event2(d, nc, node_of(s, nc), "Normal", "DisruptionTerminating", msg);
        nw_log_info("disruption", "deleted NodeClaim", NW_LS("nodeclaim", name),
                    NW_LS("method", nw_decide_method_str(cmd->method)),
                    NW_LS("reason", nw_budget_reason_str(cmd->reason)));
    }
}

/* Start a validated command: taint, condition, replacements; 0 ok, -1 aborted. */
static int execute(nw_disruption_t *d, const nw_kube_snap_t *s, const view_t *v,
                   nw_disrupt_cmd_t *cmd)
{
    nw_ctl_deps_t *c = d->deps;
    int64_t now = v->in.now;
    nw_log_info("disruption", "disrupting", NW_LS("method", nw_decide_method_str(cmd->method)),
                NW_LS("action", nw_decide_action_str(cmd->action)),
                NW_LS("reason", nw_budget_reason_str(cmd->reason)),
                NW_LI("candidates", cmd->ncandidates), NW_LI("replacements", cmd->sim.nrepl),
                NW_LF("pricePerHour", cmd->old_price),
                NW_LF("replacementPricePerHour", cmd->new_price), NW_LS("summary", cmd->summary));
    for (size_t i = 0; i < cmd->ncandidates; i++) {
        const nw_kube_obj_t *nc =
            nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, cmd->candidates[i]);
        const nw_kube_obj_t *node = node_of(s, nc);
        if (!nc || !node || node_taint(d, node->name, 1) != NW_OK) {
            if (cmd->sim.nrepl) {
                nw_log_warn("disruption", "cannot taint a candidate; command aborted",
                            NW_LS("nodeclaim", cmd->candidates[i]));
                return -1;
            }
            continue;
        }
        condw_t w = {
            "DisruptionReason", "True", nw_budget_reason_str(cmd->reason), cmd->summary, now, 0, 0};
        (void)claim_write(d, nc->name, &w);
        if (cmd->sim.nrepl) /* a delete says DisruptionTerminating right away */
            event2(d, nc, node, "Normal", "DisruptionLaunching", cmd->summary);
    }
    nw_ctl_fault(c, "disruption-tainted",
                 cmd->ncandidates ? cmd->candidates[0] : ""); /* crash point */
    inflight_t f;
    memset(&f, 0, sizeof f);
    f.started_mono = nw_clock_mono(c->clock);
    if (cmd->sim.nrepl) {
        f.repl = calloc((size_t)cmd->sim.nrepl, sizeof *f.repl);
        f.seen = calloc((size_t)cmd->sim.nrepl, sizeof *f.seen);
        if (!f.repl || !f.seen) {
            free(f.repl);
            free(f.seen);
            return -1;
        }
    }
    for (int k = 0; k < cmd->sim.nrepl; k++) {
        char name[256] = "";
        nw_err_t err = {0};
        if (!nw_ctl_may_write(c) ||
            nw_disruption_live_create(&v->live, &cmd->sim, k,
                                      cmd->rollout && cmd->ncandidates ? cmd->candidates[0] : NULL,
                                      name, sizeof name, &err) != NW_OK) {
            nw_log_warn("disruption", "cannot create a replacement NodeClaim; command aborted",
                        NW_LS("nodepool", cmd->sim.repl[k].pool), NW_LS("error", err.msg));
            inflight_free(&f);
            return -1; /* the taints go on the next pass */
        }
        f.repl[f.nrepl++] = strdup(name);
        {
            char r[32];
            nw_kmetrics_resource_type(nw_budget_reason_str(cmd->reason), r,
                                      sizeof r); /* lower case */
            const char *lv[] = {r, cmd->sim.repl[k].pool, "false"};
            nw_series_add(c->series, &NW_KMETRICS_NODECLAIMS_CREATED, lv, 1);
        }
        nw_log_info(
            "disruption", "created replacement NodeClaim", NW_LS("nodeclaim", name),
            NW_LS("nodepool", cmd->sim.repl[k].pool),
            NW_LS("instanceType", cmd->sim.repl[k].ntypes ? cmd->sim.repl[k].types[0].name : ""),
            NW_LI("instanceTypes", cmd->sim.repl[k].ntypes),
            NW_LB("spotOnly", !cmd->sim.repl[k].allow_on_demand));
    }
    atomic_fetch_add(&d->decisions[cmd->method][cmd->action][cmd->reason], 1);
    count_decision(c, v->st, cmd);
    f.cmd = *cmd;
    memset(cmd, 0, sizeof *cmd);
    inflight_t *nf = realloc(d->fl, (d->nfl + 1) * sizeof *nf);
    if (!nf) {
        inflight_free(&f);
        return -1;
    }
    d->fl = nf;
    d->fl[d->nfl++] = f;
    return 0;
}

/* Progress of the commands in flight: wait for the replacements to initialize, then delete the
 * candidates (kubernetes-sigs/karpenter pkg/controllers/disruption/queue.go). */
static void progress(nw_disruption_t *d, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = d->deps;
    int64_t mono = nw_clock_mono(c->clock);
    size_t k = 0;
    for (size_t i = 0; i < d->nfl; i++) {
        inflight_t *f = &d->fl[i];
        int ready = 1, failed = 0;
        const char *why = "";
        for (size_t r = 0; r < f->nrepl && !failed; r++) {
            const nw_kube_obj_t *o =
                nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, f->repl[r]);
            if (o)
                f->seen[r] = 1;
            if (o && o->terminating) {
                failed = 1;
                why = "a replacement NodeClaim is being deleted";
            } else if (!o && (f->seen[r] || mono - f->started_mono > UNSEEN_GRACE_NS)) {
                failed = 1;
                why = "a replacement NodeClaim disappeared";
            } else if (!o || nw_node_meta_condition_status(&o->nodeclaim->m, "Initialized") !=
                                 NW_NODE_COND_TRUE) {
                ready = 0;
            }
        }
        if (!failed && !ready && mono - f->started_mono > d->o.command_timeout_ns) {
            failed = 1;
            why = "the replacements did not initialize within the command timeout";
        }
        if (failed) {
            atomic_fetch_add(&d->failed, 1);
            nw_log_warn("disruption", "disruption command failed", NW_LS("reason", why),
                        NW_LS("summary", f->cmd.summary));
            for (size_t n = 0; n < f->cmd.ncandidates; n++) {
                const nw_kube_obj_t *nc =
                    nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, f->cmd.candidates[n]);
                event2(d, nc, node_of(s, nc), "Warning", "DisruptionFailed", why);
            }
            untaint_all(d, s, &f->cmd);
            inflight_free(f);
            d->next_pass_mono = mono;
            continue;
        }
        if (!ready) {
            if (!f->waiting_noted) {
                f->waiting_noted = 1;
                for (size_t n = 0; n < f->cmd.ncandidates; n++) {
                    const nw_kube_obj_t *nc =
                        nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, f->cmd.candidates[n]);
                    event2(d, nc, node_of(s, nc), "Normal", "DisruptionWaitingReadiness",
                           "Waiting on readiness to continue disruption");
                }
            }
            d->fl[k++] = *f;
            continue;
        }
        delete_candidates(d, s, &f->cmd);
        for (size_t r = 0; r < f->nrepl; r++) {
            if (d->nrepl == MAX_RECENT) {
                memmove(d->repl, d->repl + 1, (MAX_RECENT - 1) * sizeof *d->repl);
                d->nrepl--;
            }
            snprintf(d->repl[d->nrepl].name, sizeof d->repl[d->nrepl].name, "%s", f->repl[r]);
            d->repl[d->nrepl++].mono = mono;
        }
        inflight_free(f);
        d->next_pass_mono = mono;
    }
    d->nfl = k;
}

static void emit_notes(nw_disruption_t *d, const nw_kube_snap_t *s, const nw_disrupt_cmd_t *cmd)
{
    for (size_t i = 0; i < cmd->nnotes; i++) {
        const nw_disrupt_note_t *n = &cmd->notes[i];
        uint64_t h = fnv(fnv(1469598103934665603ULL, n->reason), n->message);
        size_t j;
        for (j = 0; j < d->nnoted; j++)
            if (strcmp(d->noted[j].nodeclaim, n->nodeclaim) == 0)
                break;
        if (j < d->nnoted && d->noted[j].hash == h)
            continue; /* said already */
        if (j == d->nnoted) {
            if (d->nnoted == MAX_NOTED)
                continue;
            snprintf(d->noted[j].nodeclaim, sizeof d->noted[j].nodeclaim, "%s", n->nodeclaim);
            d->nnoted++;
        }
        d->noted[j].hash = h;
        const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, n->nodeclaim);
        event2(d, nc, NULL, "Normal", n->reason, n->message);
        nw_log_info("disruption", "not disrupted", NW_LS("nodeclaim", n->nodeclaim),
                    NW_LS("reason", n->reason), NW_LS("message", n->message));
    }
}

/* A command held for validation: re-derived on the current state (the view's in-command
 * list has no pending names), executed if it still holds, else rejected. */
static void validate_pending(nw_disruption_t *d, const nw_kube_snap_t *s, view_t *v, int64_t mono)
{
    nw_ctl_deps_t *c = d->deps;
    char why[300] = "";
    if (c->batch_waiting && c->batch_waiting(c->batch_waiting_ud))
        return; /* its simulation after the provisioning batch (the command stays pending) */
    int ok =
        nw_decide_validate(v->st, &d->pending, nw_disruption_live_sim, &v->live, why, sizeof why);
    d->has_pending = 0;
    if (ok == 1) {
        if (execute(d, s, v, &d->pending) == 0 && d->pending.method == NW_DIS_NONE)
            progress(d, s); /* a delete with no replacements proceeds at once */
    } else {
        atomic_fetch_add(&d->rejected, 1);
        nw_series_add(c->series, &NW_KMETRICS_DISRUPTION_FAILED_VALIDATIONS,
                      (const char *[]){consolidation_type(d->pending.method)},
                      (double)d->pending.ncandidates);
        nw_log_info("disruption", "command rejected at validation", NW_LS("reason", why),
                    NW_LS("summary", d->pending.summary));
        for (size_t i = 0; i < d->pending.ncandidates; i++) {
            const nw_kube_obj_t *nc =
                nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, d->pending.candidates[i]);
            event2(d, nc, node_of(s, nc), "Normal", "ConsolidationRejected", why);
        }
    }
    nw_decide_cmd_cleanup(&d->pending);
    d->next_pass_mono = mono;
}

/* Is a pass due: its time has come and the cluster changed since a pass that found
 * nothing (or that was UNCHANGED_RECHECK_NS ago)? */
static int64_t duty_gap(const nw_disruption_t *d, int64_t cost)
{
    int64_t duty = d->o.view_duty > 0 ? d->o.view_duty : 0;
    return duty && cost > VIEW_MAX_GAP_NS / duty ? VIEW_MAX_GAP_NS : cost * duty;
}

static bool pass_due(nw_disruption_t *d, const nw_kube_snap_t *s, int64_t mono)
{
    if (mono < d->next_pass_mono)
        return false;
    /* after a pass that found nothing, under a stream of changes, passes (they read the
     * whole cluster) take at most about 1/view_duty of the time */
    if (d->pass_was_idle && mono - d->pass_mono < duty_gap(d, d->pass_cost_ns))
        return false;
    if (d->idle_gen && d->idle_gen == nw_kube_cache_snap_generation(s) &&
        mono - d->idle_gen_mono < UNCHANGED_RECHECK_NS) {
        /* nothing changed since a pass that found nothing (Karpenter skips these too;
         * budget windows and consolidateAfter are re-evaluated at least every 5 min, and
         * the Consolidatable marker's write is a change) */
        d->next_pass_mono = mono + d->o.poll_ns;
        return false;
    }
    return true;
}

/* A pass's counters and gauges, and its report at log.level debug. */
static void count_pass(nw_disruption_t *d, const view_t *v, const nw_disrupt_cmd_t *cmd)
{
    for (int r = 0; r < NW_DIS_NREASONS; r++)
        atomic_fetch_add(&d->blocked[r], (uint64_t)cmd->budget_blocked[r]);
    count_timeouts(d->deps, cmd);
    count_evaluations(d->deps, cmd);
    budget_gauges(d->deps, v->st);
    if (nw_log_enabled(NW_LOG_DEBUG)) { /* each pass's report at log.level debug */
        cJSON *rep = nw_decide_report_json(v->st, cmd);
        char *txt = rep ? cJSON_PrintUnformatted(rep) : NULL;
        nw_log_debug("disruption", "pass report", NW_LS("report", txt ? txt : ""));
        free(txt);
        cJSON_Delete(rep);
    }
}

/* A pass that found nothing: the next one in poll_ns, skipped while nothing changes. */
static void pass_idle(nw_disruption_t *d, const nw_kube_snap_t *s, const view_t *v, int64_t mono)
{
    d->next_pass_mono = mono + d->o.poll_ns;
    d->pass_was_idle = 1;
    /* time-based rules that will flip without any change in the cluster (a
     * nomination expiring, consolidateAfter running out) keep the passes going */
    int waiting = 0;
    for (size_t i = 0; i < v->st->nnodes && !waiting; i++)
        waiting = v->st->nodes[i].nominated || v->st->nodes[i].consolidatable_at > v->in.now ||
                  v->st->nodes[i].accel_idle_at > v->in.now ||
                  v->st->nodes[i].rollout_deadline > v->in.now ||
                  (v->st->nodes[i].rollout_class >= 0 && v->st->nodes[i].expired_at > v->in.now);
    if (waiting)
        d->idle_gen = 0;
    else if (d->idle_gen != nw_kube_cache_snap_generation(s)) {
        d->idle_gen = nw_kube_cache_snap_generation(s);
        d->idle_gen_mono = mono;
    }
}

/* One disruption pass: decide, then hold the command for validation or execute it. */
static void run_pass(nw_disruption_t *d, const nw_kube_snap_t *s, view_t *v, int64_t mono)
{
    atomic_fetch_add(&d->passes, 1);
    d->pass_mono = mono;
    d->pass_was_idle = 0;
    d->skipped_for_budgets = 0;
    cleanup(d, s);
    nw_disrupt_cmd_t cmd;
    nw_err_t err = {0};
    if (nw_decide(v->st, nw_disruption_live_sim, &v->live, &cmd, &err) != NW_OK) {
        nw_log_warn("disruption", "disruption pass failed", NW_LS("error", err.msg));
        d->next_pass_mono = mono + d->o.poll_ns;
        nw_decide_cmd_cleanup(&cmd);
        return;
    }
    if (cmd.yielded) {
        /* a provisioning batch waits: the pass is made again at the next tick after it */
        nw_log_debug("disruption", "pass stopped for a provisioning batch");
        d->next_pass_mono = mono;
        nw_decide_cmd_cleanup(&cmd);
        return;
    }
    count_pass(d, v, &cmd);
    emit_notes(d, s, &cmd);
    if (cmd.method == NW_DIS_NONE) {
        pass_idle(d, s, v, mono);
        nw_decide_cmd_cleanup(&cmd);
        return;
    }
    if (cmd.validate && d->o.validation_ns > 0) {
        nw_log_info("disruption", "command waits for validation",
                    NW_LS("method", nw_decide_method_str(cmd.method)),
                    NW_LS("summary", cmd.summary),
                    NW_LI("delayMs", d->o.validation_ns / NW_NS_PER_MS));
        /* the simulation's handle may borrow this tick's snapshot: validation makes a
         * fresh one (the narrowed replacement options are kept) */
        if (cmd.sim.handle && cmd.sim.handle_free)
            cmd.sim.handle_free(cmd.sim.handle);
        cmd.sim.handle = NULL;
        cmd.sim.handle_free = NULL;
        d->pending = cmd;
        d->has_pending = 1;
        d->pending_mono = mono;
        return;
    }
    execute(d, s, v, &cmd);
    nw_decide_cmd_cleanup(&cmd);
    progress(d, s);
    d->next_pass_mono = mono;
}

/* Could a pass on this (light) state start a command: a pool whose budgets allow a
 * disruption for some reason, or an expired node of a staged accelerator rollout (expiry
 * is not held by budgets)? With none, the pass is skipped before any candidate is built. */
static bool budgets_allow(const nw_disrupt_state_t *st)
{
    for (size_t k = 0; k < st->npools; k++)
        for (int r = 0; r < NW_DIS_NREASONS; r++)
            if (st->pools[k].allowed[r] > 0)
                return true;
    for (size_t i = 0; i < st->nnodes; i++)
        if (st->nodes[i].rollout_class >= 0 && st->nodes[i].expired)
            return true;
    return false;
}

/* Each pool's counted and disrupting nodes of a look, for rest_recheck (out of memory:
 * forgotten, the re-check looks). */
static void rest_remember(nw_disruption_t *d, const nw_disrupt_state_t *st)
{
    struct rest_pool *r = realloc(d->rest, (st->npools + 1) * sizeof *r);
    if (!r) {
        d->skipped_for_budgets = 0;
        return;
    }
    d->rest = r;
    d->nrest = st->npools;
    for (size_t k = 0; k < st->npools; k++) {
        snprintf(r[k].name, sizeof r[k].name, "%s", st->pools[k].name);
        r[k].counted = st->pools[k].counted;
        r[k].disrupting = st->pools[k].disrupting;
    }
}

/* A pass skipped because every budget allows 0: like a pass that found nothing, except
 * that no timer keeps the passes going (a budget opens by a change to its pool or its
 * node counts, or in a schedule window, which the periodic re-check sees). */
static void pass_skipped(nw_disruption_t *d, const nw_kube_snap_t *s, const view_t *v, int64_t mono)
{
    pool_budget_gauges(d->deps, v->st);
    d->next_pass_mono = mono + d->o.poll_ns;
    d->pass_was_idle = 1;
    d->pass_mono = mono;
    d->pass_cost_ns = 0;
    d->skipped_for_budgets = 1;
    rest_remember(d, v->st);
    if (d->idle_gen != nw_kube_cache_snap_generation(s)) {
        d->idle_gen = nw_kube_cache_snap_generation(s);
        d->idle_gen_mono = mono;
    }
}

/* When the next full tick is due with no change in the cluster: the next pass, and the
 * earliest time a node becomes consolidatable (its Consolidatable marker flips then). */
static int64_t wake_at(nw_disruption_t *d, const nw_kube_snap_t *s, const view_t *v, int64_t mono)
{
    int64_t wake = d->next_pass_mono;
    if (d->idle_gen && d->idle_gen == nw_kube_cache_snap_generation(s) &&
        d->idle_gen_mono + UNCHANGED_RECHECK_NS > wake)
        wake = d->idle_gen_mono + UNCHANGED_RECHECK_NS;
    int64_t timer = INT64_MAX;
    for (size_t i = 0; i < v->st->nnodes; i++) {
        const nw_disrupt_node_t *n = &v->st->nodes[i];
        /* staged rollout: a replacement's deadline, a staged node's expiry */
        int64_t ats[4] = {n->consolidatable_at, n->accel_idle_at, n->rollout_deadline,
                          n->rollout_class >= 0 ? n->expired_at : 0};
        for (int k = 0; k < 4; k++)
            if (ats[k] > v->in.now && mono + (ats[k] - v->in.now) < timer)
                timer = mono + (ats[k] - v->in.now);
    }
    d->timer_mono = timer;
    return timer < wake ? timer : wake;
}

/* A full tick reads every NodeClaim, Node and pod. It is skipped while nothing is in flight
 * and no timer is due, when the cluster has not changed since the last one, or changed
 * less than VIEW_MIN_NS after it (a stream of pod events: the markers and the pass then
 * see the changes together, a second later). */
static bool tick_skippable(const nw_disruption_t *d, const nw_kube_snap_t *s, int64_t mono)
{
    if (!d->viewed || d->has_pending || d->nfl || mono >= d->wake_mono)
        return false;
    if (d->view_gen == nw_kube_cache_snap_generation(s))
        return true;
    int64_t duty = d->o.view_duty > 0 ? d->o.view_duty : 0;
    int64_t gap =
        duty && d->view_cost_ns > VIEW_MAX_GAP_NS / duty ? VIEW_MAX_GAP_NS : d->view_cost_ns * duty;
    return mono - d->view_mono < (gap > VIEW_MIN_NS ? gap : VIEW_MIN_NS);
}

/* The periodic re-check of a cluster that has not changed since a pass skipped because
 * every budget allowed 0, with no time-based trigger due: the budgets are evaluated again
 * on the counts of that look (a schedule window may have opened); while they still allow
 * nothing, the re-check is all there is to do (true: done, the next one in 5 minutes). */
static bool rest_recheck(nw_disruption_t *d, const nw_kube_snap_t *s, int64_t mono)
{
    if (!d->skipped_for_budgets || !d->viewed || d->has_pending || d->nfl ||
        d->view_gen != nw_kube_cache_snap_generation(s) || mono >= d->timer_mono)
        return false;
    int64_t now = nw_clock_now(d->deps->clock);
    size_t np = nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS);
    for (size_t i = 0; i < np; i++) {
        const nw_kube_obj_t *p = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
        const struct rest_pool *r = NULL;
        for (size_t k = 0; k < d->nrest && !r; k++)
            if (strcmp(d->rest[k].name, p->name) == 0)
                r = &d->rest[k];
        if (!r)
            continue; /* not a pool of the look (no name): no node of it either */
        for (int why = 0; why < NW_DIS_NREASONS; why++) {
            nw_err_t e = {0};
            int a = nw_budget_allowed(p->json, (nw_disrupt_reason_t)why, r->counted, now, &e);
            if (a == NW_DIS_UNLIMITED || a - r->disrupting > 0)
                return false;
        }
    }
    d->idle_gen_mono = mono;
    d->wake_mono =
        mono + UNCHANGED_RECHECK_NS < d->timer_mono ? mono + UNCHANGED_RECHECK_NS : d->timer_mono;
    return true;
}

bool nw_disruption_due(const nw_disruption_t *d, const nw_kube_snap_t *s)
{
    return d && nw_ctl_may_write(d->deps) && !tick_skippable(d, s, nw_clock_mono(d->deps->clock));
}

void nw_disruption_tick(nw_disruption_t *d, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = d ? d->deps : NULL;
    if (!d || !nw_ctl_may_write(c))
        return;
    int64_t mono = nw_clock_mono(c->clock);
    if (tick_skippable(d, s, mono) || rest_recheck(d, s, mono))
        return;
    int64_t cost0 = nw_clock_mono(nw_clock_system());
    view_t v;
    /* the look starts light (no pods); a pass or a validation makes it whole */
    if (view_build(d, s, &v, true) != 0)
        return;
    bool marked = markers(d, s, &v);
    rollout_upkeep(d, s, &v);
    progress(d, s);
    if (d->skipped_for_budgets) /* the counts of this look, not of the last pass's */
        rest_remember(d, v.st);
    bool launched = nw_ctl_claims_launched(s); /* s does not change: asked once */
    if (!launched)
        goto out; /* a NodeClaim is being launched: decide once it has a providerID */
    if (d->has_pending) {
        if (mono - d->pending_mono >= d->o.validation_ns) {
            if (view_whole(d, s, &v) != 0)
                return;
            validate_pending(d, s, &v, mono);
        }
    } else if (pass_due(d, s, mono)) {
        if (!budgets_allow(v.st))
            pass_skipped(d, s, &v, mono);
        else {
            int64_t p0 = nw_clock_mono(nw_clock_system());
            if (view_whole(d, s, &v) != 0)
                return;
            run_pass(d, s, &v, mono);
            d->pass_cost_ns = nw_clock_mono(nw_clock_system()) - p0;
        }
    }
out:
    d->viewed = 1;
    /* a look whose markers stopped early is made again at the next tick, changes or not */
    d->view_gen = marked ? nw_kube_cache_snap_generation(s) : 0;
    d->view_mono = mono;
    d->wake_mono = launched && marked ? wake_at(d, s, &v, mono) : mono;
    keep_light(d, s, &v);
    view_free(&v);
    d->view_cost_ns = nw_clock_mono(nw_clock_system()) - cost0;
}

/* ---- metrics ---- */

nw_rc_t nw_disruption_metrics(nw_disruption_t *d, nw_buf_t *out)
{
    static const nw_disrupt_method_t methods[] = {NW_DIS_EMPTINESS, NW_DIS_DRIFT, NW_DIS_MULTI,
                                                  NW_DIS_SINGLE, NW_DIS_ACCEL_IDLE};
    const size_t nmethods = sizeof methods / sizeof methods[0];
    nw_rc_t rc =
        nw_buf_addf(out, "# HELP nodewarden_disruption_decisions_total Disruption commands "
                         "started, by method, action and reason.\n"
                         "# TYPE nodewarden_disruption_decisions_total counter\n");
    for (size_t m = 0; m < nmethods && rc == NW_OK; m++)
        for (int a = 0; a < 2 && rc == NW_OK; a++)
            for (int r = 0; r < NW_DIS_NREASONS && rc == NW_OK; r++) {
                uint64_t v = atomic_load(&d->decisions[methods[m]][a][r]);
                if (v)
                    rc = nw_buf_addf(
                        out,
                        "nodewarden_disruption_decisions_total{method=\"%s\",action=\"%s\","
                        "reason=\"%s\"} %llu\n",
                        nw_decide_method_str(methods[m]),
                        nw_decide_action_str((nw_disrupt_action_t)a),
                        nw_budget_reason_str((nw_disrupt_reason_t)r), (unsigned long long)v);
            }
    if (rc == NW_OK)
        rc = nw_buf_addf(out,
                         "# HELP nodewarden_disruption_nodes_disrupted_total NodeClaims deleted "
                         "by disruption, by method and reason.\n"
                         "# TYPE nodewarden_disruption_nodes_disrupted_total counter\n");
    for (size_t m = 0; m < nmethods && rc == NW_OK; m++)
        for (int r = 0; r < NW_DIS_NREASONS && rc == NW_OK; r++) {
            uint64_t v = atomic_load(&d->disrupted[methods[m]][r]);
            if (v)
                rc = nw_buf_addf(
                    out,
                    "nodewarden_disruption_nodes_disrupted_total{method=\"%s\",reason=\"%s\"} "
                    "%llu\n",
                    nw_decide_method_str(methods[m]), nw_budget_reason_str((nw_disrupt_reason_t)r),
                    (unsigned long long)v);
        }
    if (rc == NW_OK)
        rc = nw_buf_addf(out,
                         "# HELP nodewarden_disruption_budget_blocked_total Candidates passed over "
                         "because their NodePool's budget allowed no more, by reason (per pass).\n"
                         "# TYPE nodewarden_disruption_budget_blocked_total counter\n");
    for (int r = 0; r < NW_DIS_NREASONS && rc == NW_OK; r++)
        rc = nw_buf_addf(out, "nodewarden_disruption_budget_blocked_total{reason=\"%s\"} %llu\n",
                         nw_budget_reason_str((nw_disrupt_reason_t)r),
                         (unsigned long long)atomic_load(&d->blocked[r]));
    if (rc == NW_OK)
        rc = nw_buf_addf(out,
                         "# HELP nodewarden_disruption_passes_total Disruption passes.\n"
                         "# TYPE nodewarden_disruption_passes_total counter\n"
                         "nodewarden_disruption_passes_total %llu\n"
                         "# HELP nodewarden_disruption_commands_rejected_total Commands dropped at "
                         "validation.\n"
                         "# TYPE nodewarden_disruption_commands_rejected_total counter\n"
                         "nodewarden_disruption_commands_rejected_total %llu\n"
                         "# HELP nodewarden_disruption_commands_failed_total Commands whose "
                         "replacements failed or timed out.\n"
                         "# TYPE nodewarden_disruption_commands_failed_total counter\n"
                         "nodewarden_disruption_commands_failed_total %llu\n",
                         (unsigned long long)atomic_load(&d->passes),
                         (unsigned long long)atomic_load(&d->rejected),
                         (unsigned long long)atomic_load(&d->failed));
    return rc;
}
