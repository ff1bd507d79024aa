/*
 * scaler/controllers/provisioning.c — batching, placement, NodeClaim creation and launch
 * (kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go, batcher.go;
 * aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go Create). The placement is the
 * scheduling simulation (scaler/sched/, nw_solve) on the live snapshot that
 * scaler/state/simsnap.c builds; NodeClaims are created and launched by
 * scaler/nodeclaim/nodeclaim.h.
 */
#include <stdbool.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/quantity.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strs.h"
#include "api/wellknown.h"
#include "scaler/controllers/cohort.h"
#include "scaler/controllers/nominate.h"
#include "scaler/controllers/provisioning.h"
#include "scaler/controllers/tickgate.h"
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/metrics/kmetrics.h"
#include "scaler/sched/snap.h"
#include "scaler/state/simsnap.h"

#define RESOLVE_EVERY_NS (10 * NW_NS_PER_SEC)
/* How long after the first solve not yet trimmed its transient memory is handed back
 * (malloc_trim) while pods are still pending: the re-plans of a scale-out come in runs,
 * each reusing the heap the one before freed, and a trim walks every arena's heap (a
 * 5,000-pod scale-out with 48 re-plans spent 6 % of nodewarden's CPU in it, one trim per
 * solve); so at most one trim in this time. Counted from the last solve instead, a run of
 * re-plans 0.2 s apart put the trim off for as long as it lasted, and the memory the
 * other threads freed meanwhile (the batch's launches, writes and watch events, each
 * thread's own arena) stayed resident: a 5,000-pod scale-out's peak grew by 11 MiB in 20 s
 * that way. */
#define TRIM_AFTER_NS (2 * NW_NS_PER_SEC)
/* How long a pod nominated to a NodeClaim whose node is up may stay pending before its
 * placement is looked at again (nw_nominations_missed) */
#define MISS_GRACE_NS (NW_NS_PER_SEC / 5)
/* The threads that write pods' status.nominatedNodeName (nominate.h) */
#define NOMINATE_THREADS 8

struct nw_provisioning {
    nw_ctl_deps_t *deps;
    nw_nodeclaim_t *claims; /* borrowed (scaler/nodeclaim/nodeclaim.h) */
    nw_ctl_shared_t *mem;   /* borrowed */
    nw_provisioning_opts_t o;
    /* the batch window: it opens at the arrival of its first trigger and idles from the
     * arrival of its last (a pod's arrival: when the watch made it pending in the cache,
     * nw_kube_obj_t.pending_since; anything else arrives when a tick sees it) */
    int64_t window_open_mono, last_trigger_mono, next_resolve_mono;
    int64_t epoch_mono; /* the first tick since new or reset: no arrival counts as earlier */
    /* the snapshot's Nodes' part kept between batches while pods are pending
     * (scaler/state/simsnap.h), made once a window opens (prepared: in this window) */
    nw_simsnap_cache_t *base;
    bool prepared;
    int64_t miss_due_mono; /* when a nominated pod's grace ends (0: none waiting) */
    int64_t trim_due_mono; /* the first solve's time since the last trim, 0: none since */
    char **seen_uids;      /* pending pod uids already counted as triggers (owned) */
    size_t nseen;
    /* seen_uids, quiet and nom_busy indexed by uid (common/strs.h; *_ix_ok: made since the
     * array last changed): each pass looks up every pending pod in them, and at 5,000
     * pending pods a binary search's cold strings took a fifth of the reconcile thread */
    nw_strs_index_t seen_ix, quiet_ix, busy_ix;
    bool seen_ix_ok, quiet_ix_ok, busy_ix_ok;
    uint64_t ice_deletes; /* nw_nodeclaim_ice_deletes when last looked at */
    _Atomic uint64_t solves;
    /* the triggers of the last tick: their number, the snapshot generation they were found
     * in, and whether each of them was counted in seen_uids then (a tick on the same
     * generation finds the same ones, all seen) */
    uint64_t trig_gen;
    size_t trig_n;
    bool trig_known;
    /* which EC2NodeClasses were Ready=True when last looked at (a hash of their names): a
     * class that becomes ready lets the pods waiting on its pools be placed at once */
    uint64_t ready_classes;
    /* no skipping: each Node's disrupted taint read once per version, and the Nodes being
     * deleted or disrupted kept while no Node or NodeClaim changes */
    nw_tickgate_t nodes;
    const nw_kube_obj_t **deleting; /* of the gate's snapshot */
    size_t ndeleting, capdeleting;
    bool deleting_known;
    /* status.nominatedNodeName writes: the writer, the uids of the pods with a write in
     * flight (owned), the snapshot generation last looked at with nothing left to
     * submit, and the counters */
    nw_nominate_t *nom;
    char **nom_busy;
    size_t nnom_busy;
    /* the pods whose nomination is not written (choose_quiet; owned uids) */
    char **quiet;
    size_t nquiet;
    uint64_t nom_gen;
    bool nom_done;
    /* a snapshot used only to read pods' requests in its resource slots (room_left) */
    nw_sched_snap_t *reqsnap;
    _Atomic uint64_t nom_written, nom_cleared, nom_failed;
    /* NodeClaims of one batch registered together (cohort.h) */
    nw_cohorts_t *cohorts;
};

/* What a Node's version says (the memo of tickgate.h). */
typedef struct {
    bool disrupted; /* it has the karpenter.sh/disrupted:NoSchedule taint */
} node_facts_t;

nw_provisioning_t *nw_provisioning_new(nw_ctl_deps_t *deps, nw_nodeclaim_t *claims,
                                       nw_ctl_shared_t *mem, const nw_provisioning_opts_t *o)
{
    nw_provisioning_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->deps = deps;
    c->claims = claims;
    c->mem = mem;
    if (o)
        c->o = *o;
    if (!(c->nom = nw_nominate_new(deps, NOMINATE_THREADS)) ||
        !(c->base = nw_simsnap_cache_new()) || !(c->cohorts = nw_cohort_new())) {
        nw_nominate_free(c->nom);
        nw_simsnap_cache_free(c->base);
        free(c);
        return NULL;
    }
    nw_tickgate_init(&c->nodes,
                     NW_TICKGATE_KIND(NW_KUBE_NODES) | NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS),
                     sizeof(node_facts_t));
    return c;
}

void nw_provisioning_reset(nw_provisioning_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nseen; i++)
        free(c->seen_uids[i]);
    free(c->seen_uids);
    c->seen_uids = NULL;
    c->nseen = 0;
    for (size_t i = 0; i < c->nquiet; i++)
        free(c->quiet[i]);
    c->nquiet = 0;
    c->seen_ix_ok = c->quiet_ix_ok = c->busy_ix_ok = false;
    c->window_open_mono = c->last_trigger_mono = c->next_resolve_mono = 0;
    c->epoch_mono = 0;
    c->trig_known = false;
    c->deleting_known = false;
    c->nom_done = false;
    c->prepared = false;
    nw_simsnap_cache_drop(c->base);
    nw_tickgate_reset(&c->nodes);
}

void nw_provisioning_free(nw_provisioning_t *c)
{
    nw_provisioning_reset(c);
    if (c) {
        nw_tickgate_cleanup(&c->nodes);
        free(c->deleting);
        nw_nominate_free(c->nom);
        nw_simsnap_cache_free(c->base);
        nw_cohort_free(c->cohorts);
        for (size_t i = 0; i < c->nnom_busy; i++)
            free(c->nom_busy[i]);
        free(c->nom_busy);
        for (size_t i = 0; i < c->nquiet; i++)
            free(c->quiet[i]);
        free(c->quiet);
        nw_strs_index_free(&c->seen_ix);
        nw_strs_index_free(&c->quiet_ix);
        nw_strs_index_free(&c->busy_ix);
        nw_snapshot_free(c->reqsnap);
    }
    free(c);
}

nw_rc_t nw_provisioning_metrics(nw_provisioning_t *c, nw_buf_t *out)
{
    if (!c)
        return NW_OK;
    const nw_ctl_counter_t v[] = {
        {"nodewarden_scaler_solves_total", "Batches placed.", &c->solves},
        {"nodewarden_scaler_nominations_written_total",
         "Pending pods whose status.nominatedNodeName was set to the Node planned for them.",
         &c->nom_written},
        {"nodewarden_scaler_nominations_cleared_total",
         "Pending pods whose status.nominatedNodeName, written by nodewarden, was cleared "
         "because the plan changed.",
         &c->nom_cleared},
        {"nodewarden_scaler_nominations_failed_total",
         "status.nominatedNodeName writes not made (the pod changed since: tried again on "
         "the next snapshot, or an error).",
         &c->nom_failed},
    };
    return nw_ctl_counters_write(out, v, sizeof v / sizeof *v);
}

/* A hash of the names of the EC2NodeClasses whose Ready condition is True. */
static uint64_t ready_classes(const nw_kube_snap_t *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_EC2NODECLASSES); i++) {
        const nw_kube_obj_t *k = nw_kube_cache_snap_at(s, NW_KUBE_EC2NODECLASSES, i);
        const char *st = nw_json_condition(k->json, "Ready");
        if (!st || strcmp(st, "True") != 0)
            continue;
        for (const char *p = k->name; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        h = (h ^ 0xffu) * 1099511628211ULL;
    }
    return h;
}

/* ---- batching ---- */

/* Is uid one of the n strings of v, through its index *ix (made first when !*ok; without
 * memory, one string after the other)? */
static bool uid_in(nw_strs_index_t *ix, bool *ok, char *const *v, size_t n, const char *uid)
{
    if (!n)
        return false;
    if (!*ok)
        *ok = nw_strs_index_build(ix, v, n, sizeof *v, 0);
    if (*ok)
        return nw_strs_index_find(ix, uid) != SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], uid) == 0)
            return true;
    return false;
}

/* Was this pending pod's uid already counted? */
static bool seen(nw_provisioning_t *c, const char *uid)
{
    return uid_in(&c->seen_ix, &c->seen_ix_ok, c->seen_uids, c->nseen, uid);
}

/* false when not every uid could be kept */
static bool seen_reset(nw_provisioning_t *c, const nw_kube_obj_t *const *p, size_t n)
{
    /* keep only uids still pending (their strings moved over), add the new ones */
    char **keep = calloc(n + 1, sizeof *keep);
    size_t nk = 0;
    if (c->nseen && !c->seen_ix_ok)
        c->seen_ix_ok =
            nw_strs_index_build(&c->seen_ix, c->seen_uids, c->nseen, sizeof *c->seen_uids, 0);
    for (size_t i = 0; keep && i < n; i++) {
        size_t at =
            c->nseen && c->seen_ix_ok ? nw_strs_index_find(&c->seen_ix, p[i]->uid) : SIZE_MAX;
        if (at != SIZE_MAX) {
            keep[nk++] = c->seen_uids[at];
            c->seen_uids[at] = NULL; /* moved */
        } else if ((keep[nk] = strdup(p[i]->uid)) != NULL)
            nk++;
    }
    for (size_t i = 0; i < c->nseen; i++)
        free(c->seen_uids[i]);
    free(c->seen_uids);
    c->seen_uids = keep;
    c->nseen = keep ? nk : 0;
    c->seen_ix_ok = false;
    return keep && nk == n;
}

/* When a trigger arrived: a pending pod when the watch made it pending
 * (nw_kube_obj_t.pending_since), anything else (a Node whose pods must move, a pod nominated
 * by the provisioner's own write) now; never before the provisioner's first tick (a new
 * leadership term batches what it finds from then) nor after now. */
static int64_t arrival(const nw_provisioning_t *c, const nw_kube_obj_t *o, int64_t mono)
{
    int64_t a = o->pod && o->pending && o->pending_since ? o->pending_since : mono;
    if (a > mono)
        a = mono;
    return a < c->epoch_mono ? c->epoch_mono : a;
}

/* Per-pool reasons as one message: "Failed to schedule pod, nodepool "a": ..., ...", and the
 * NodePools left out because their EC2NodeClass is not ready: "...; nodepool "b":
 * EC2NodeClass "c" is not ready: ClusterCIDRNotFound: ...". */
static void unsched_msg(const nw_simsnap_t *ss, const nw_sched_unsched_t *u, char *msg, size_t n)
{
    size_t off;
    if (u->reason)
        off = (size_t)snprintf(msg, n, "Failed to schedule pod, %s", u->reason);
    else {
        off = (size_t)snprintf(msg, n, "Failed to schedule pod");
        for (int k = 0; k < u->nreasons && off < n; k++)
            if (u->reasons[k])
                off += (size_t)snprintf(msg + off, n - off, ", nodepool \"%s\": %s",
                                        nw_snapshot_pool_name(ss->sched, (size_t)k), u->reasons[k]);
    }
    if (ss->notready && off < n)
        (void)snprintf(msg + off, n - off, "; %s", ss->notready);
}

/* The batch's snapshot options. */
static nw_simsnap_opts_t batch_opts(const nw_provisioning_t *p, const nw_kube_obj_t *const *own,
                                    size_t nown)
{
    return (nw_simsnap_opts_t){.include_pending = true,
                               .reschedule_deleting = true,
                               .repack = p->o.repack,
                               .own_nominated = own,
                               .nown_nominated = nown};
}

/* While a window is open: the snapshot's Nodes' part made (once a window) from this tick's
 * snapshot, so that the batch at the window's close only adds its pods. */
static void prepare_base(nw_provisioning_t *p, const nw_kube_snap_t *s)
{
    if (p->prepared)
        return;
    p->prepared = true;
    nw_ctl_deps_t *c = p->deps;
    nw_simsnap_opts_t so = batch_opts(p, NULL, 0);
    nw_ctl_prepare_catalog(c, s);
    nw_simsnap_env_t env;
    nw_ctl_sim_env(c, p->mem, &env);
    nw_err_t err = {0};
    if (nw_simsnap_cache_prepare(p->base, &env, s, &so, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot build the scheduling snapshot's Nodes",
                    NW_LS("error", err.msg));
}

static void choose_quiet(nw_provisioning_t *p, const nw_simsnap_t *ss, const nw_sched_results_t *r);
static void record_cohort(nw_provisioning_t *p, const nw_simsnap_t *ss,
                          const nw_sched_results_t *r);
static const char *claim_node(const nw_kube_snap_t *s, const char *claim);

static void provision(nw_provisioning_t *p, const nw_kube_snap_t *s, size_t npend,
                      const nw_kube_obj_t *const *own, size_t nown, int64_t waited_ns)
{
    nw_ctl_deps_t *c = p->deps;
    int64_t b0 = nw_clock_mono(c->clock);
    nw_simsnap_opts_t so = batch_opts(p, own, nown);
    nw_simsnap_t ss;
    nw_err_t err = {0};
    atomic_fetch_add(&p->solves, 1);
    nw_ctl_prepare_catalog(c, s);
    nw_simsnap_env_t env;
    nw_ctl_sim_env(c, p->mem, &env);
    uint64_t builds, kept0, kept1; /* did the build take the kept Nodes' part */
    nw_simsnap_cache_counts(p->base, &builds, &kept0);
    if (nw_simsnap_build_cached(p->base, &env, s, &so, &ss, &err) != NW_OK) {
        nw_log_error("provisioner", "cannot build the scheduling snapshot",
                     NW_LS("error", err.msg));
        nw_simsnap_release(p->base, &ss);
        return;
    }
    nw_simsnap_cache_counts(p->base, &builds, &kept1);
    nw_sched_results_t r;
    int64_t t0 = nw_clock_mono(c->clock);
    nw_rc_t src = nw_solve(ss.sched, nw_clock_now(c->clock), &r, &err);
    int64_t t1 = nw_clock_mono(c->clock);
    nw_series_observe(c->series, &NW_KMETRICS_SCHEDULER_DURATION, (const char *[]){"provisioner"},
                      (double)(t1 - t0) / 1e9);
    if (src != NW_OK) {
        nw_log_error("provisioner", "scheduling simulation failed", NW_LS("error", err.msg));
        nw_solve_results_free(&r);
        nw_simsnap_release(p->base, &ss);
        return;
    }
    nw_log_info("provisioner", "batch scheduled", NW_LI("pendingPods", (long long)npend),
                NW_LI("podsConsidered", r.considered), NW_LI("newNodeClaims", r.nclaims),
                NW_LI("onExistingCapacity", r.nplaced), NW_LI("unschedulable", r.nunsched),
                NW_LI("nodePoolsNotReady", (long long)ss.nnotready),
                NW_LF("pricePerHour", r.total_price),
                NW_LF("batchWaitSeconds", (double)waited_ns / 1e9),
                NW_LF("snapshotSeconds", (double)(t0 - b0) / 1e9),
                NW_LI("snapshotNodesKept", (long long)(kept1 - kept0)),
                NW_LF("solveSeconds", (double)(t1 - t0) / 1e9));
    /* a pod an earlier batch planned elsewhere that this one puts on new capacity: its
     * planned room was gone (debug: what a later look changed) */
    for (int k = 0; nw_log_enabled(NW_LOG_DEBUG) && k < r.nclaims; k++)
        for (int j = 0; j < r.claims[k].npods; j++) {
            int pi = r.claims[k].pods[j];
            const char *was = pi >= 0 && (size_t)pi < ss.npods
                                  ? nw_nominations_claim_of(p->mem->noms, ss.pods[pi]->uid)
                                  : NULL;
            if (was)
                nw_log_debug("provisioner", "planned pod moved to new capacity",
                             NW_LS("pod", ss.pods[pi]->key), NW_LS("plannedOn", was),
                             NW_LS("preferredNode", claim_node(s, was) ? claim_node(s, was) : ""));
        }
    /* nominations no pending pod looked up and older than 30 s go */
    int64_t mono = nw_clock_mono(c->clock);
    nw_nominations_prune(p->mem->noms, ss.looked_up, ss.nlooked_up, mono);
    /* pods placed on in-flight capacity stay nominated to it */
    for (int i = 0; i < r.nplaced; i++) {
        const char *claim = nw_simsnap_claim_of(&ss, r.placed[i].node);
        int pi = r.placed[i].pod;
        if (claim && pi >= 0 && (size_t)pi < ss.npods)
            nw_nominations_nominate(p->mem->noms, ss.pods[pi]->uid, claim, mono);
    }
    for (int i = 0; i < r.nunsched; i++) {
        const nw_sched_unsched_t *u = &r.unsched[i];
        if (u->pod < 0 || (size_t)u->pod >= ss.npods)
            continue;
        const nw_kube_obj_t *pod = ss.pods[u->pod];
        char msg[2048];
        unsched_msg(&ss, u, msg, sizeof msg);
        if (!nw_nominations_event_once(p->mem->noms, pod->uid, msg))
            continue;
        nw_log_info("provisioner", "pod cannot be placed", NW_LS("pod", pod->key),
                    NW_LS("reason", msg));
        if (nw_ctl_may_write(c))
            (void)nw_kube_write_event_pod(c->rec, pod->pod, "Warning", "FailedScheduling", msg,
                                          NULL);
    }
    nw_nominations_event_prune(p->mem->noms);
    if (r.nclaims > 0 && nw_ctl_may_write(c)) {
        nw_simsnap_claim_opts_t co = {.reason = "provisioning"};
        nw_nodeclaim_create_batch(p->claims, s, &ss, r.claims, r.nclaims, &co);
        record_cohort(p, &ss, &r);
    }
    choose_quiet(p, &ss, &r);
    nw_solve_results_free(&r);
    nw_simsnap_release(p->base, &ss);
    /* its transient memory goes back to the system once the solves stop, or TRIM_AFTER_NS
     * after the first of a run of them (tick_trim) */
    if (!p->trim_due_mono)
        p->trim_due_mono = nw_clock_mono(c->clock);
}

/* The solves' transient memory back to the system once none is pending: nothing left to
 * place, or TRIM_AFTER_NS since the first solve not trimmed yet. */
static void tick_trim(nw_provisioning_t *p, size_t npending, int64_t mono)
{
    if (!p->trim_due_mono || (npending && mono - p->trim_due_mono < TRIM_AFTER_NS))
        return;
    p->trim_due_mono = 0;
    malloc_trim(0);
}

/* The providerIDs of the NodeClaims being deleted, sorted (NULL: none, or out of memory:
 * *known false then). */
static const char **claims_going(const nw_kube_snap_t *s, size_t *n, bool *known)
{
    size_t nc = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS), k = 0;
    const char **v = NULL;
    *known = true;
    for (size_t i = 0; i < nc; i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (!o->terminating || !o->provider_id[0])
            continue;
        if (!v && !(v = malloc(nc * sizeof *v))) {
            *known = false;
            break;
        }
        v[k++] = o->provider_id;
    }
    if (v)
        qsort(v, k, sizeof *v, nw_strs_cmp);
    *n = k;
    return v;
}

/* A node being deleted or disrupted. going: the providerIDs of the NodeClaims being deleted
 * (claims_going); only a Node with one of them can have its NodeClaim being deleted. */
static bool node_deleting(nw_provisioning_t *c, const nw_kube_snap_t *s, const nw_kube_obj_t *n,
                          const char *const *going, size_t ngoing, bool going_known)
{
    bool fresh;
    node_facts_t *f = nw_tickgate_memo(&c->nodes, n, &fresh);
    bool disrupted = f && !fresh ? f->disrupted : nw_ctl_has_disrupted_taint(n->node);
    if (f)
        f->disrupted = disrupted;
    int deleting = n->terminating || disrupted;
    const char *pid = n->provider_id;
    if (!deleting && pid[0] &&
        (!going_known || (ngoing && bsearch(&pid, going, ngoing, sizeof *going, nw_strs_cmp)))) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_nodeclaim_by_provider_id(s, pid);
        deleting = nc && nc->terminating;
    }
    return deleting;
}

/* Does the Node run pods that must move elsewhere? */
static bool runs_movable_pods(const nw_kube_snap_t *s, const nw_kube_obj_t *n)
{
    const nw_kube_obj_t *const *on;
    size_t np = nw_kube_cache_snap_pods_on_node(s, n->name, &on);
    for (size_t i = 0; i < np; i++)
        if (nw_simsnap_pod_reschedulable(on[i]))
            return true;
    return false;
}

/* The Nodes being deleted or disrupted that still run pods that must move elsewhere,
 * appended to trig (nt). */
static void moving_nodes(nw_provisioning_t *c, const nw_kube_snap_t *s, const nw_kube_obj_t **trig,
                         size_t *nt)
{
    if (c->deleting_known && nw_tickgate_same(&c->nodes, s, NW_KUBE_NODES) &&
        nw_tickgate_same(&c->nodes, s, NW_KUBE_NODECLAIMS)) {
        /* no Node or NodeClaim changed: the same Nodes are being deleted or disrupted */
        for (size_t i = 0; i < c->ndeleting; i++)
            if (runs_movable_pods(s, c->deleting[i]))
                trig[(*nt)++] = c->deleting[i];
        nw_tickgate_ran(&c->nodes, s, false, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
        return;
    }
    size_t ngoing = 0;
    bool going_known;
    const char **going = claims_going(s, &ngoing, &going_known);
    size_t nn = nw_kube_cache_snap_count(s, NW_KUBE_NODES);
    c->ndeleting = 0;
    c->deleting_known = true;
    for (size_t i = 0; i < nn; i++) {
        const nw_kube_obj_t *n = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        if (!node_deleting(c, s, n, going, ngoing, going_known))
            continue;
        if (c->ndeleting == c->capdeleting) {
            size_t cap = c->capdeleting ? 2 * c->capdeleting : 16;
            const nw_kube_obj_t **v = realloc(c->deleting, cap * sizeof *v);
            if (v) {
                c->deleting = v;
                c->capdeleting = cap;
            }
        }
        if (c->ndeleting < c->capdeleting)
            c->deleting[c->ndeleting++] = n;
        else
            c->deleting_known = false; /* out of memory: looked at again next tick */
        if (runs_movable_pods(s, n))
            trig[(*nt)++] = n;
    }
    free(going);
    nw_tickgate_ran(&c->nodes, s, false, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
}

/* ---- static NodePools (kubernetes-sigs/karpenter pkg/controllers/static) ---- */

static bool cond_is_true(const cJSON *obj, const char *type)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, nw_json_get(nw_json_get(obj, "status"), "conditions"))
    {
        const char *t = nw_json_str(it, "type"), *st = nw_json_str(it, "status");
        if (t && st && strcmp(t, type) == 0)
            return strcmp(st, "True") == 0;
    }
    return false;
}

/* spec.replicas of a static NodePool, -1 for a dynamic one */
static int64_t pool_replicas(const cJSON *pool)
{
    const cJSON *r = nw_json_get(nw_json_get(pool, "spec"), "replicas");
    return cJSON_IsNumber(r) && r->valuedouble >= 0 ? (int64_t)r->valuedouble : -1;
}

/* spec.limits.nodes, INT64_MAX when unset */
static int64_t pool_node_limit(const cJSON *pool)
{
    const cJSON *l = nw_json_get(nw_json_get(nw_json_get(pool, "spec"), "limits"), "nodes");
    nw_quantity_t q;
    if (cJSON_IsString(l) && nw_quantity_parse(l->valuestring, &q, NULL) == NW_OK)
        return nw_quantity_value(q);
    if (cJSON_IsNumber(l))
        return (int64_t)l->valuedouble;
    return INT64_MAX;
}

/* NodeClaims of pool `name` this process created that the cache does not show yet */
static int64_t uncached_of(const nw_provisioning_t *p, const nw_kube_snap_t *s, const char *name)
{
    int64_t n = 0;
    for (const nw_inflight_claim_t *r = p->mem->inflight.head; r; r = r->next) {
        if (!r->obj || r->deleted || nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, r->name))
            continue;
        const char *pl = nw_json_str(nw_json_get(nw_json_get(r->obj, "metadata"), "labels"),
                                     "karpenter.sh/nodepool");
        n += pl && strcmp(pl, name) == 0;
    }
    return n;
}

typedef struct {
    const nw_kube_obj_t *nc;
    int rank; /* 0 not launched, 1 empty, 2 pods, 3 do-not-disrupt pods */
    int pods;
} scale_down_t;

static int cmp_scale_down(const void *a, const void *b)
{
    const scale_down_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->pods != y->pods)
        return x->pods - y->pods;
    return strcmp(x->nc->name, y->nc->name);
}

/* Delete n of the pool's running NodeClaims (pkg/controllers/static/deprovisioning: the
 * ones not launched first, then empty nodes, then the fewest pods, nodes with
 * do-not-disrupt pods last); termination drains them. */
static void static_scale_down(nw_provisioning_t *p, const nw_kube_snap_t *s, const char *pool,
                              int64_t n)
{
    nw_ctl_deps_t *c = p->deps;
    const nw_kube_obj_t *const *ncs;
    size_t nn = nw_kube_cache_snap_nodeclaims_for_nodepool(s, pool, &ncs);
    scale_down_t *v = calloc(nn + 1, sizeof *v);
    if (!v)
        return;
    size_t k = 0;
    for (size_t i = 0; i < nn; i++) {
        if (ncs[i]->terminating)
            continue;
        scale_down_t *d = &v[k++];
        d->nc = ncs[i];
        if (!ncs[i]->provider_id[0])
            continue; /* rank 0 */
        const char *node = ncs[i]->nodeclaim->node_name[0] ? ncs[i]->nodeclaim->node_name : NULL;
        const nw_kube_obj_t *const *on;
        size_t np = node ? nw_kube_cache_snap_pods_on_node(s, node, &on) : 0;
        int dnd = 0;
        for (size_t j = 0; j < np; j++) {
            const char *a = nw_pod_annotation(on[j]->pod, "karpenter.sh/do-not-disrupt");
            dnd |= a && strcmp(a, "true") == 0;
            d->pods += nw_simsnap_pod_reschedulable(on[j]) != 0;
        }
        d->rank = dnd ? 3 : d->pods ? 2 : 1;
    }
    qsort(v, k, sizeof *v, cmp_scale_down);
    for (size_t i = 0; i < k && (int64_t)i < n; i++) {
        nw_err_t err = {0};
        nw_log_info("provisioner.static", "deleting NodeClaim to satisfy the replica count",
                    NW_LS("nodepool", pool), NW_LS("nodeclaim", v[i].nc->name));
        if (nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, v[i].nc->name, NULL,
                                 NULL, &err) != NW_OK)
            nw_log_warn("provisioner.static", "cannot delete the NodeClaim",
                        NW_LS("nodeclaim", v[i].nc->name), NW_LS("error", err.msg));
    }
    free(v);
}

/* Hold each static NodePool (spec.replicas, Ready) at its replicas: NodeClaims from its
 * template for the missing ones (as far as limits.nodes allows, its NodeClaims being
 * deleted counted too), and the surplus of running ones deleted. */
static void static_tick(nw_provisioning_t *p, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = p->deps;
    if (!nw_ctl_may_write(c))
        return;
    size_t npools = nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS);
    int64_t *want = calloc(npools + 1, sizeof *want);
    if (!want)
        return;
    int up = 0;
    for (size_t i = 0; i < npools; i++) {
        const nw_kube_obj_t *np = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
        int64_t replicas = pool_replicas(np->json);
        if (replicas < 0 || np->terminating || !cond_is_true(np->json, "Ready"))
            continue;
        const nw_kube_obj_t *const *ncs;
        size_t nn = nw_kube_cache_snap_nodeclaims_for_nodepool(s, np->name, &ncs);
        int64_t extra = uncached_of(p, s, np->name);
        int64_t total = (int64_t)nn + extra, running = extra;
        for (size_t k = 0; k < nn; k++)
            running += !ncs[k]->terminating;
        int64_t add = replicas - total, room = pool_node_limit(np->json) - total;
        if (add > room)
            add = room;
        if (add > 0) {
            want[i] = add;
            up = 1;
        }
        if (running > replicas)
            static_scale_down(p, s, np->name, running - replicas);
    }
    if (up) {
        nw_simsnap_opts_t so = {0};
        nw_simsnap_t ss;
        nw_err_t err = {0};
        nw_ctl_prepare_catalog(c, s);
        nw_simsnap_env_t env;
        nw_ctl_sim_env(c, p->mem, &env);
        nw_sched_results_t r;
        memset(&r, 0, sizeof r);
        if (nw_simsnap_build(&env, s, &so, &ss, &err) == NW_OK) {
            for (size_t i = 0; i < npools; i++) {
                const nw_kube_obj_t *np = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
                if (pool_replicas(np->json) >= 0)
                    /* the pool was just taken from the same snapshot */
                    (void)nw_snapshot_static_want(ss.sched, np->name, want[i]);
            }
            if (nw_solve(ss.sched, nw_clock_now(c->clock), &r, &err) == NW_OK && r.nclaims > 0) {
                nw_log_info("provisioner.static", "creating NodeClaims for static NodePools",
                            NW_LI("nodeClaims", r.nclaims));
                nw_simsnap_claim_opts_t co = {
                    .reason = "provisioning", .no_nominate = true, .no_events = true};
                nw_nodeclaim_create_batch(p->claims, s, &ss, r.claims, r.nclaims, &co);
            }
        } else {
            nw_log_error("provisioner.static", "cannot build the scheduling snapshot",
                         NW_LS("error", err.msg));
        }
        nw_solve_results_free(&r);
        nw_simsnap_free(&ss);
    }
    free(want);
}

/* Is the NodeClaim initialized, and its Node seen so (labelled karpenter.sh/initialized,
 * the write that also lifts the startup taints)? The NodeClaim's condition can arrive
 * before the Node's update, and a solve in between would find the node still tainted. */
static bool claim_up(const nw_kube_snap_t *s, const char *claim)
{
    const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, claim);
    if (!nc || nc->terminating ||
        nw_node_meta_condition_status(&nc->nodeclaim->m, "Initialized") != NW_NODE_COND_TRUE)
        return false;
    const char *nn = nc->nodeclaim->node_name;
    const nw_kube_obj_t *node = nn[0] ? nw_kube_cache_snap_get(s, NW_KUBE_NODES, NULL, nn) : NULL;
    const char *lab = node ? nw_node_meta_label(&node->node->m, NW_LABEL_INITIALIZED) : NULL;
    return lab && strcmp(lab, "true") == 0;
}

/* ---- status.nominatedNodeName (KEP-5278: kube-scheduler 1.35 tries a pod's nominated node
 * first, and counts the pods nominated to a node as taking its room for pods of no higher
 * priority) ---- */

/* The Node of NodeClaim claim as soon as it exists (found by the launched instance's
 * providerID, before the lifecycle controller registers it and lifts its
 * karpenter.sh/unregistered taint: the nomination is then on the pods before any of them
 * can bind there), NULL before or when either is being deleted. */
static const char *claim_node(const nw_kube_snap_t *s, const char *claim)
{
    const nw_kube_obj_t *nc =
        claim ? nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, claim) : NULL;
    const nw_kube_obj_t *node = nc && !nc->terminating && nc->provider_id[0]
                                    ? nw_kube_cache_snap_node_by_provider_id(s, nc->provider_id)
                                    : NULL;
    return node && !node->terminating ? node->name : NULL;
}

/* Is Node name still tainted karpenter.sh/unregistered (the lifecycle controller, which runs
 * after the provisioner in a pass, lifts it and so lets pods bind there)? */
static bool node_unregistered(const nw_kube_snap_t *s, const char *name)
{
    const nw_kube_obj_t *n = nw_kube_cache_snap_get(s, NW_KUBE_NODES, NULL, name);
    return n && nw_node_meta_has_taint(&n->node->m, NW_TAINT_UNREGISTERED, NULL);
}

/* A pod that waits for a node: Pending, unbound, not being deleted. */
static bool waiting(const nw_kube_obj_t *o)
{
    return o->pod && !o->pod->node_name[0] && !o->pod->terminating && !nw_pod_is_terminal(o->pod);
}

/* Does the pod's status.nominatedNodeName hold what the provisioner wrote (not the
 * kube-scheduler's nomination)? */
static bool own_nomination(const nw_provisioning_t *c, const nw_kube_obj_t *o)
{
    const char *w = nw_nominations_written(c->mem->noms, o->uid);
    return o->pod->nominated[0] && w && strcmp(o->pod->nominated, w) == 0;
}

/* The waiting pods whose status.nominatedNodeName the provisioner wrote: pending to it
 * (the cache leaves a nominated pod out of its pending pods). Owned array of borrowed
 * objects; NULL with *n 0 when none (or out of memory). */
static const nw_kube_obj_t **own_nominated(const nw_provisioning_t *c, const nw_kube_snap_t *s,
                                           size_t *n)
{
    const nw_kube_obj_t *const *v;
    size_t nv = nw_kube_cache_snap_pods_in_phase(s, "Pending", &v), k = 0;
    const nw_kube_obj_t **out = NULL;
    for (size_t i = 0; i < nv; i++) {
        if (!waiting(v[i]) || !own_nomination(c, v[i]))
            continue;
        if (!out && !(out = malloc(nv * sizeof *out)))
            break;
        out[k++] = v[i];
    }
    *n = k;
    return out;
}

/* ---- the pods whose nomination is not written ----
 * A nomination holds a pod's planned room against the other pods; every write is an API
 * request, and a Node is registered only once the writes naming it are done, so at 200
 * writes a second a 1,000-pod scale-out waits about 3.5 s for them (5,000 pods: 23 s).
 * Pods that are all alike (one spec, labels, namespace and priority) need no nomination
 * among themselves: whichever of them takes a room planned for another leaves its own
 * room for that one. Against the other pods, which hold their rooms by their nominations
 * once written, such a group is safe when none of its pods asks for more of any resource
 * than any other pod planned with it: a room another pod took before its own nomination
 * was written leaves that pod's planned room free, and that room holds one of the group's
 * pods. So the largest such group of a batch (two pods or more) is left unnominated, while
 * no pod of an earlier group is still waiting for its claim and no pod planned in the
 * batch has pod (anti-)affinity or a topology spread (whose plan depends on each pod's
 * place). In Karpenter's basic scale-out it is the 500 small pods of 1,000. Such a pod
 * still pending is not taken for one that missed its room (missed_nominations): it takes
 * whichever room of its group it meets, so its own NodeClaim's coming up says nothing of
 * it, and a scheduler trying hundreds of them against every node (a 5,000-pod scale-out
 * with 1,900 pods pending re-placed them 27 times in 5 s, each time onto the capacity
 * already planned); the 10-second look still places any left over. */

typedef struct {
    const nw_kube_obj_t *pod; /* the first of its group */
    size_t n;
    nw_sched_res_t req;
} qgroup_t;

static bool same_group(const nw_pod_t *x, const nw_pod_t *y)
{
    return x->spec == y->spec && x->labels == y->labels && strcmp(x->ns, y->ns) == 0 &&
           x->has_priority == y->has_priority && x->priority == y->priority;
}

static bool pod_topology(const nw_pod_t *p)
{
    const cJSON *aff = nw_json_get(p->spec, "affinity");
    return nw_json_get(p->spec, "topologySpreadConstraints") || nw_json_get(aff, "podAffinity") ||
           nw_json_get(aff, "podAntiAffinity");
}

/* Is pod uid left unnominated? */
static bool quiet(nw_provisioning_t *c, const char *uid)
{
    return uid_in(&c->quiet_ix, &c->quiet_ix_ok, c->quiet, c->nquiet, uid);
}

/* The pods of the batch's results r planned onto NodeClaims (new, or in flight: placed on a
 * claim's capacity), as indexes of ss->pods into out (room for every pod of ss); their
 * number. */
static size_t planned_pods(const nw_simsnap_t *ss, const nw_sched_results_t *r, int *out)
{
    size_t n = 0;
    for (int k = 0; k < r->nclaims; k++)
        for (int j = 0; j < r->claims[k].npods; j++) {
            int i = r->claims[k].pods[j];
            if (i >= 0 && (size_t)i < ss->npods && n < ss->npods)
                out[n++] = i;
        }
    for (int k = 0; k < r->nplaced; k++) {
        int i = r->placed[k].pod;
        if (i >= 0 && (size_t)i < ss->npods && n < ss->npods &&
            nw_simsnap_claim_of(ss, r->placed[k].node))
            out[n++] = i;
    }
    return n;
}

/* Does a ask for no more of any resource than b? */
static bool res_le(const nw_sched_res_t *a, const nw_sched_res_t *b)
{
    for (int k = 0; k < NW_SCHED_NRES; k++)
        if (a->v[k] > b->v[k])
            return false;
    return true;
}

/* The batch's group to leave unnominated (above), into c->quiet. */
static void choose_quiet(nw_provisioning_t *p, const nw_simsnap_t *ss, const nw_sched_results_t *r)
{
    /* the pods left unnominated by an earlier batch that still wait for their claim */
    size_t k = 0;
    for (size_t i = 0; i < p->nquiet; i++) {
        if (nw_nominations_claim_of(p->mem->noms, p->quiet[i]))
            p->quiet[k++] = p->quiet[i];
        else
            free(p->quiet[i]);
    }
    p->nquiet = k;
    p->quiet_ix_ok = false;
    if (p->nquiet || !ss->npods)
        return;
    int *idx = malloc(ss->npods * sizeof *idx);
    qgroup_t *g = malloc(ss->npods * sizeof *g);
    size_t n = idx && g ? planned_pods(ss, r, idx) : 0, ng = 0;
    bool ok = n >= 2;
    for (size_t i = 0; ok && i < n; i++) {
        const nw_pod_t *pod = ss->pods[idx[i]]->pod;
        if (!pod || pod_topology(pod)) {
            ok = false;
            break;
        }
        size_t j = 0;
        while (j < ng && !same_group(g[j].pod->pod, pod))
            j++;
        if (j < ng) {
            g[j].n++;
            continue;
        }
        nw_err_t err = {0};
        g[ng] = (qgroup_t){.pod = ss->pods[idx[i]], .n = 1};
        if (nw_snapshot_pod_requests(ss->sched, pod->spec, "spec", &g[ng].req, &err) != NW_OK)
            ok = false;
        ng++;
    }
    /* the largest group that asks for no more than any other */
    size_t best = ng;
    for (size_t j = 0; ok && j < ng; j++) {
        if (g[j].n < 2 || (best < ng && g[j].n <= g[best].n))
            continue;
        bool le = true;
        for (size_t o = 0; le && o < ng; o++)
            le = o == j || res_le(&g[j].req, &g[o].req);
        if (le)
            best = j;
    }
    char **v = ok && best < ng ? malloc(g[best].n * sizeof *v) : NULL;
    for (size_t i = 0; v && i < n; i++) {
        const nw_kube_obj_t *o = ss->pods[idx[i]];
        if (same_group(g[best].pod->pod, o->pod) && (v[p->nquiet] = strdup(o->uid)) != NULL)
            p->nquiet++;
    }
    if (v) {
        free(p->quiet);
        p->quiet = v;
        p->quiet_ix_ok = false;
        nw_log_debug("provisioner", "pods left unnominated (alike, and no larger than the others)",
                     NW_LI("pods", (long long)p->nquiet), NW_LS("like", g[best].pod->key));
    }
    free(idx);
    free(g);
}

/* The batch's new NodeClaims that hold pods of a spread over a key other than the hostname
 * (their names from the nominations the creates recorded) become one cohort: their Nodes
 * are registered once every domain they are planned in has one (cohort.h). */
static void record_cohort(nw_provisioning_t *p, const nw_simsnap_t *ss, const nw_sched_results_t *r)
{
    const char **v = malloc((size_t)r->nclaims * sizeof *v), *keys[8];
    size_t n = 0, nkeys = 0;
    for (int k = 0; v && k < r->nclaims; k++) {
        const char *claim = NULL;
        for (int j = 0; j < r->claims[k].npods; j++) {
            int i = r->claims[k].pods[j];
            if (i < 0 || (size_t)i >= ss->npods)
                continue;
            const nw_pod_t *pod = ss->pods[i]->pod;
            const char *mine[8];
            if (!nw_cohort_pod_domain_keys(pod, mine, 0, 8))
                continue;
            nkeys = nw_cohort_pod_domain_keys(pod, keys, nkeys, 8);
            if (!claim)
                claim = nw_nominations_claim_of(p->mem->noms, ss->pods[i]->uid);
        }
        bool dup = false;
        for (size_t m = 0; claim && m < n && !dup; m++)
            dup = strcmp(v[m], claim) == 0;
        if (claim && !dup)
            v[n++] = claim;
    }
    if (n >= 2 && nkeys) {
        if (nw_cohort_add(p->cohorts, v, n, keys, nkeys) != NW_OK)
            nw_log_warn("provisioner", "out of memory: the batch's Nodes register one by one");
        else
            nw_log_debug("provisioner", "NodeClaims registered once their spreads' domains exist",
                         NW_LI("nodeClaims", (long long)n), NW_LS("key", keys[0]));
    }
    free(v);
}

/* Has the pod a write in flight? (the first n of nom_busy, unchanged since the index was
 * made) */
static bool nom_busy(nw_provisioning_t *c, size_t n, const char *uid)
{
    return uid_in(&c->busy_ix, &c->busy_ix_ok, c->nom_busy, n, uid);
}

/* The writes that finished since the last tick: each success recorded as the
 * provisioner's own nomination, and its pod's uid no longer busy. */
static void collect_nominations(nw_provisioning_t *c)
{
    nw_nominate_result_t *r;
    size_t nr = nw_nominate_collect(c->nom, &r), wrote = 0, cleared = 0, failed = 0;
    if (!nr)
        return;
    const char **fin = malloc(nr * sizeof *fin); /* the uids no longer busy, sorted */
    for (size_t i = 0; fin && i < nr; i++)
        fin[i] = r[i].uid;
    if (fin)
        qsort(fin, nr, sizeof *fin, nw_strs_cmp);
    size_t k = 0;
    for (size_t i = 0; i < c->nnom_busy; i++) {
        const char *u = c->nom_busy[i];
        if (!fin || bsearch(&u, fin, nr, sizeof *fin, nw_strs_cmp))
            free(c->nom_busy[i]); /* out of memory: every pod looked at again */
        else
            c->nom_busy[k++] = c->nom_busy[i];
    }
    c->nnom_busy = k;
    c->busy_ix_ok = false;
    free(fin);
    for (size_t i = 0; i < nr; i++) {
        const char *u = r[i].uid;
        if (r[i].rc == NW_OK) {
            nw_nominations_wrote(c->mem->noms, u, r[i].node);
            atomic_fetch_add(r[i].node ? &c->nom_written : &c->nom_cleared, 1);
            *(r[i].node ? &wrote : &cleared) += 1;
            continue;
        }
        atomic_fetch_add(&c->nom_failed, 1);
        /* a failed test (the pod changed: bound, or nominated by the scheduler) or a pod
         * gone is no error: the next snapshot shows it as it is */
        bool changed = r[i].rc == NW_ENOTFOUND || r[i].rc == NW_ECONFLICT ||
                       (r[i].rc == NW_EKUBE && strstr(r[i].err.msg, "422"));
        if (!changed && !failed++)
            nw_log_warn("provisioner", "cannot write the pod's nominatedNodeName",
                        NW_LS("pod", r[i].key), NW_LS("node", r[i].node ? r[i].node : ""),
                        NW_LS("error", r[i].err.msg));
    }
    c->nom_done = false; /* the pods written are looked at again */
    nw_log_debug("provisioner", "pods nominated to their nodes", NW_LI("nominated", wrote),
                 NW_LI("cleared", cleared), NW_LI("failed", nr - wrote - cleared));
    nw_nominate_results_free(r, nr);
}

/* A write to submit: the pod, and the node to nominate it to (NULL: clear). */
typedef struct {
    const nw_kube_obj_t *pod;
    const char *node;
} nom_write_t;

/* By node (the clears first), then in the scan's order: each Node's writes are submitted
 * together, so they finish together (a batch of 70 Nodes makes about 1,000 writes) */
static int cmp_nom_write(const void *a, const void *b)
{
    const nom_write_t *x = a, *y = b;
    int c = !x->node || !y->node ? (x->node != NULL) - (y->node != NULL) : strcmp(x->node, y->node);
    return c ? c : (x->pod > y->pod) - (x->pod < y->pod);
}

/* Submit the writes of v (sorted by cmp_nom_write), marking each pod busy; false when one
 * could not be submitted. */
static bool submit_nominations(nw_provisioning_t *c, const nom_write_t *v, size_t nv)
{
    char **busy = nv ? realloc(c->nom_busy, (c->nnom_busy + nv) * sizeof *busy) : c->nom_busy;
    if (!busy)
        return false;
    c->nom_busy = busy;
    c->busy_ix_ok = false;
    for (size_t i = 0; i < nv; i++) {
        char *uid = strdup(v[i].pod->uid);
        if (!uid || nw_nominate_submit(c->nom, v[i].pod->pod, v[i].node) != NW_OK) {
            free(uid);
            return false;
        }
        c->nom_busy[c->nnom_busy++] = uid;
        c->busy_ix_ok = false;
    }
    return true;
}

/* Tell the kube-scheduler where each planned pod goes: a waiting pod nominated to a
 * NodeClaim whose Node exists gets status.nominatedNodeName = that Node (its startup
 * taints may still keep pods off: the scheduler binds once they go, to the node the
 * packing chose, and the pods nominated there hold their room against the others). The
 * lifecycle controller registers a Node, lifting its karpenter.sh/unregistered taint, only
 * once a scan of a snapshot holding it is reported and the writes naming it are done
 * (nw_nominate_may_register), so the nominations land first; the writes for Nodes not
 * registered yet are waited for here, so those Nodes are registered together later in the
 * pass (a Node that appears meanwhile waits for the next scan). A nomination the kube-scheduler
 * made (a preemption) is never touched; one the provisioner wrote follows the plan: moved to the
 * pod's new Node, or cleared while its new NodeClaim has no Node yet (a stale one would hold room
 * on the old node). The writes go to the writer's threads (nominate.h), a Node's together; one pod
 * has at most one in flight. */
static void write_nominations(nw_provisioning_t *c, const nw_kube_snap_t *s)
{
    collect_nominations(c);
    uint64_t gen = nw_kube_cache_snap_generation(s);
    if (!nw_ctl_may_write(c->deps))
        return;
    if (c->nom_done && gen == c->nom_gen) {
        nw_nominate_scanned(c->nom, gen); /* nothing changed since the last scan */
        return;
    }
    const nw_kube_obj_t *const *v;
    size_t nv = nw_kube_cache_snap_pods_in_phase(s, "Pending", &v), nb = c->nnom_busy, nw = 0;
    nom_write_t *w = NULL;
    bool ok = true;
    for (size_t i = 0; i < nv && ok; i++) {
        const nw_kube_obj_t *o = v[i];
        if (!waiting(o))
            continue;
        const char *claim = nw_nominations_claim_of(c->mem->noms, o->uid);
        if (!claim || nom_busy(c, nb, o->uid))
            continue;
        bool own = own_nomination(c, o);
        if (!own && quiet(c, o->uid))
            continue; /* one of the batch's alike pods (choose_quiet) */
        if (o->pod->nominated[0] && !own)
            continue; /* the kube-scheduler's (or an older write of ours the watch shows) */
        const char *node = claim_node(s, claim);
        const char *was = nw_nominations_written(c->mem->noms, o->uid);
        if (node ? was && strcmp(was, node) == 0 : !own)
            continue; /* written already (the watch may not show it yet), or nothing to say */
        if (!w && !(w = malloc((nv - i) * sizeof *w)))
            ok = false;
        else
            w[nw++] = (nom_write_t){o, node};
    }
    if (nw > 1)
        qsort(w, nw, sizeof *w, cmp_nom_write);
    ok = ok && submit_nominations(c, w, nw); /* the lookups above used the first nb */
    c->nom_gen = gen;
    c->nom_done = ok;
    if (ok)
        nw_nominate_scanned(c->nom, gen);
    /* Nodes about to be registered: their pods' nominations land first, and the lifecycle
     * controller registers those Nodes later in this pass, together. Registering each Node
     * as soon as its own writes were done (not waiting here) let the kube-scheduler's passes
     * see the Nodes one at a time: a 1,000-pod greedy scale-out bound about a second later
     * on the simulator and a 5,000-pod one re-placed its pods up to 48 times, the scheduler
     * judging pods against Nodes it had not seen registered yet */
    bool first = false;
    for (size_t i = 0; i < nw && !first; i++)
        first = w[i].node && node_unregistered(s, w[i].node);
    free(w);
    if (first)
        nw_nominate_wait(c->nom);
}

void nw_provisioning_nominations_wait(nw_provisioning_t *c)
{
    nw_nominate_wait(c->nom);
}

/* ---- is the planned room still there? ---- */

/* A pod spec's requests as the simulation reads them (in c->reqsnap's resource slots),
 * remembered per spec for one look (the replicas of a Deployment share theirs). */
typedef struct {
    const cJSON *spec;
    nw_sched_res_t req;
    bool ok;     /* parsed */
    bool simple; /* neither topology constraints nor host ports */
} spec_req_t;

typedef struct {
    spec_req_t *v;
    size_t n, cap;
} spec_memo_t;

/* Does the spec ask for a host port (a bound pod can take it)? */
static bool spec_hostports(const cJSON *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        const cJSON *ct, *port;
        cJSON_ArrayForEach(ct, nw_json_get(spec, lists[l]))
        {
            cJSON_ArrayForEach(port, nw_json_get(ct, "ports"))
            {
                const cJSON *hp = nw_json_get(port, "hostPort");
                if (cJSON_IsNumber(hp) && hp->valuedouble > 0)
                    return true;
            }
        }
    }
    return false;
}

/* The requests of pod (NULL when out of memory or its spec does not parse; for a pending
 * pod, `pending`, also when only a solve can tell whether it fits a node: it has pod
 * (anti-)affinity, a topology spread or a host port, which pods bound meanwhile can
 * break). */
static const nw_sched_res_t *pod_req(nw_provisioning_t *c, spec_memo_t *m, const nw_pod_t *pod,
                                     bool pending)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].spec == pod->spec)
            return m->v[i].ok && (!pending || m->v[i].simple) ? &m->v[i].req : NULL;
    if (!c->reqsnap && !(c->reqsnap = nw_snapshot_new()))
        return NULL;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        spec_req_t *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return NULL;
        m->v = v;
        m->cap = cap;
    }
    spec_req_t *e = &m->v[m->n++];
    *e = (spec_req_t){.spec = pod->spec};
    nw_err_t err = {0};
    e->ok = nw_snapshot_pod_requests(c->reqsnap, pod->spec, "spec", &e->req, &err) == NW_OK;
    e->simple = !pod_topology(pod) && !spec_hostports(pod->spec);
    return e->ok && (!pending || e->simple) ? &e->req : NULL;
}

/* A pending pod nominated to a NodeClaim (pend's index), by claim. */
typedef struct {
    const char *claim;
    size_t i;
} claim_pod_t;

static int cmp_claim_pod(const void *a, const void *b)
{
    const claim_pod_t *x = a, *y = b;
    int r = strcmp(x->claim, y->claim);
    return r ? r : (x->i > y->i) - (x->i < y->i);
}

/* Has the Node of NodeClaim claim still room for every pending pod nominated to it (the
 * v[lo..hi) of one claim), with the pods bound there counted? Then a pod of them the
 * kube-scheduler left pending has not lost its room: the scheduler has not got to it
 * (it tried it before it saw the Node, or is busy), and placing it again would find the
 * same room. false when only a solve can tell (a pod whose fit a count of requests cannot
 * judge: pod_req). */
static bool room_left(nw_provisioning_t *c, const nw_kube_snap_t *s, spec_memo_t *m,
                      const nw_kube_obj_t *const *pend, const claim_pod_t *v, size_t lo, size_t hi)
{
    const char *nname = claim_node(s, v[lo].claim);
    const nw_kube_obj_t *node =
        nname ? nw_kube_cache_snap_get(s, NW_KUBE_NODES, NULL, nname) : NULL;
    if (!node || !node->node)
        return false;
    int64_t used[NW_SCHED_NRES] = {0};
    const nw_kube_obj_t *const *on;
    size_t non = nw_kube_cache_snap_pods_on_node(s, node->name, &on);
    for (size_t i = 0; i < non; i++) {
        if (!on[i]->pod || nw_pod_is_terminal(on[i]->pod))
            continue;
        const nw_sched_res_t *r = pod_req(c, m, on[i]->pod, false);
        if (!r)
            return false;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            used[k] += r->v[k];
    }
    for (size_t j = lo; j < hi; j++) {
        const nw_sched_res_t *r = pod_req(c, m, pend[v[j].i]->pod, true);
        if (!r)
            return false;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            used[k] += r->v[k];
    }
    for (int k = 0; k < NW_SCHED_NRES; k++) {
        const char *name = c->reqsnap->res_names[k];
        nw_quantity_t q = {0};
        if (used[k] > 0 &&
            (!name || !nw_resources_get(&node->node->allocatable, name, &q) || q.milli < used[k]))
            return false;
    }
    return true;
}

/* Of the pods nw_nominations_missed took for misses (pend's indexes in miss, nmiss of
 * them), is any a real one: its planned Node no longer has room for the pods nominated to
 * it (room_left)? */
static bool misses_real(nw_provisioning_t *c, const nw_kube_snap_t *s,
                        const nw_kube_obj_t *const *pend, size_t np, const size_t *miss,
                        size_t nmiss)
{
    claim_pod_t *v = malloc((np + 1) * sizeof *v);
    if (!v)
        return true;
    size_t n = 0;
    for (size_t i = 0; i < np; i++) {
        const char *claim =
            pend[i]->pod ? nw_nominations_claim_of(c->mem->noms, pend[i]->uid) : NULL;
        if (claim)
            v[n++] = (claim_pod_t){claim, i};
    }
    qsort(v, n, sizeof *v, cmp_claim_pod);
    spec_memo_t m = {0};
    bool real = false;
    for (size_t k = 0; k < nmiss && !real; k++) {
        const char *claim = nw_nominations_claim_of(c->mem->noms, pend[miss[k]]->uid);
        claim_pod_t key = {claim, 0};
        size_t lo = 0, hi = n;
        while (lo < hi) { /* the claim's first */
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_claim_pod(&v[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        hi = lo;
        while (hi < n && strcmp(v[hi].claim, claim) == 0)
            hi++;
        real = lo == hi || !room_left(c, s, &m, pend, v, lo, hi);
    }
    free(m.v);
    free(v);
    return real;
}

/* Pending pods nominated to a NodeClaim whose node is up, tried again by the kube-scheduler
 * and still unbound after MISS_GRACE_NS while their Node no longer has room for the pods
 * planned there: the scheduler placed other pods in their room (it is free to; the tighter
 * the packing, the likelier), so they are placed again at once, rather than at the next
 * 10 s look, by a solve that counts what really runs on the new nodes. A pod whose Node
 * still has room is no miss: the scheduler has not got to it yet. 1 when some missed;
 * miss_due_mono is when the next grace ends, 0 for none. */
static int missed_nominations(nw_provisioning_t *c, const nw_kube_snap_t *s,
                              const nw_kube_obj_t *const *pend, size_t np, int64_t mono)
{
    size_t *miss = NULL, nmiss = 0;
    int64_t due = INT64_MAX;
    bool oom = false;
    for (size_t i = 0; i < np; i++) {
        const char *claim = nw_nominations_claim_of(c->mem->noms, pend[i]->uid);
        if (!claim || quiet(c, pend[i]->uid))
            continue; /* an alike pod takes any room of its group (choose_quiet) */
        if (!nw_nominations_missed(c->mem->noms, pend[i]->uid,
                                   pend[i]->pod ? nw_pod_scheduled_mark(pend[i]->pod) : 0,
                                   claim_up(s, claim), mono, MISS_GRACE_NS, &due))
            continue;
        if (!miss && !(miss = malloc(np * sizeof *miss)))
            oom = true;
        else
            miss[nmiss++] = i;
    }
    int missed = oom || (nmiss && misses_real(c, s, pend, np, miss, nmiss));
    if (nmiss && !missed)
        nw_log_debug("provisioner", "pods left pending on Nodes that still have their room",
                     NW_LI("pods", (long long)nmiss));
    free(miss);
    c->miss_due_mono = !missed && due != INT64_MAX ? mono + due : 0;
    return missed;
}

/* A tick's look at its triggers: pending pods, and nodes being deleted or disrupted whose
 * pods must move (their replacement capacity is computed with the pending pods, as Schedule
 * in kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go does). 1 when the
 * batch window is to open or extend, with *first and *last the triggers' first and last
 * arrivals; *nt: the triggers; *missed: pods missed the capacity planned for them; -1 when
 * out of memory. */
static int scan_triggers(nw_provisioning_t *c, const nw_kube_snap_t *s,
                         const nw_kube_obj_t *const *pend, size_t np, int64_t mono, size_t *ntp,
                         int *missed, int64_t *first, int64_t *last)
{
    size_t nn = nw_kube_cache_snap_count(s, NW_KUBE_NODES), nt = 0;
    const nw_kube_obj_t **trig = malloc((np + nn + 1) * sizeof *trig);
    if (!trig)
        return -1;
    int trigger = 0;
    for (size_t i = 0; i < np; i++)
        trig[nt++] = pend[i];
    moving_nodes(c, s, trig, &nt);
    *first = INT64_MAX;
    *last = INT64_MIN;
    for (size_t i = 0; i < nt; i++)
        if (!seen(c, trig[i]->uid)) {
            int64_t a = arrival(c, trig[i], mono);
            *first = a < *first ? a : *first;
            *last = a > *last ? a : *last;
            trigger = 1;
        }
    bool now_trigger = false; /* a trigger that arrives with this tick */
    if (!trigger)
        *missed = missed_nominations(c, s, pend, np, mono);
    now_trigger |= *missed;
    if (nt && c->next_resolve_mono && mono >= c->next_resolve_mono)
        now_trigger = true; /* pods still pending: look again every 10 s */
    if (nt && !c->next_resolve_mono)
        now_trigger = true;
    uint64_t rc = ready_classes(s);
    if (rc != c->ready_classes) {
        /* a class became ready (or stopped being): the waiting pods are placed again */
        c->ready_classes = rc;
        if (nt)
            now_trigger = true;
    }
    if (now_trigger && !trigger) {
        /* no new pod: the batch is of what is pending now (new pods, with the others
         * pending, time the window by their arrivals whatever else is due) */
        *first = *last = mono;
        trigger = 1;
    }
    /* after this tick every trigger is seen, unless seen_reset could not keep them */
    c->trig_known = trigger ? seen_reset(c, trig, nt) : true;
    c->trig_gen = nw_kube_cache_snap_generation(s);
    c->trig_n = nt;
    free(trig);
    *ntp = nt;
    return trigger;
}

void nw_provisioning_tick(nw_provisioning_t *c, const nw_kube_snap_t *s)
{
    /* what the launch workers finished since the last tick (scaler/nodeclaim/nodeclaim.h) */
    nw_nodeclaim_collect(c->claims);
    nw_inflight_expire(&c->mem->inflight, s, nw_clock_mono(c->deps->clock));
    /* NodeClaims that exist without a providerID: launch them (once) */
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || nc->provider_id[0])
            continue;
        nw_nodeclaim_launch_cached(c->claims, s, nc);
    }
    if (c->o.static_capacity)
        static_tick(c, s);
    uint64_t ice = nw_nodeclaim_ice_deletes(c->claims);
    if (ice != c->ice_deletes) {
        /* a launch met insufficient capacity and deleted its NodeClaim: place its pods
         * again at once (without the ICE'd offerings) */
        c->ice_deletes = ice;
        c->next_resolve_mono = 0;
    }
    write_nominations(c, s);
    const nw_kube_obj_t *const *cpend;
    size_t ncp = nw_kube_cache_snap_pending_pods(s, &cpend);
    /* pending: the cache's, and the pods nominated by the provisioner's own write */
    size_t nown = 0;
    const nw_kube_obj_t **own = own_nominated(c, s, &nown);
    const nw_kube_obj_t **all = NULL;
    if (nown && (all = malloc((ncp + nown) * sizeof *all)) != NULL) {
        memcpy(all, cpend, ncp * sizeof *all);
        memcpy(all + ncp, own, nown * sizeof *all);
    }
    const nw_kube_obj_t *const *pend = all ? all : cpend;
    size_t np = all ? ncp + nown : ncp;
    int64_t mono = nw_clock_mono(c->deps->clock);
    if (!c->epoch_mono)
        c->epoch_mono = mono;
    int trigger = 0;
    /* the arrivals of this tick's triggers: the first and the last */
    int64_t first_arrival = mono, last_arrival = mono;
    size_t nt;
    uint64_t gen = nw_kube_cache_snap_generation(s);
    int missed = 0;
    if (c->trig_known && gen == c->trig_gen &&
        !(c->trig_n && (!c->next_resolve_mono || mono >= c->next_resolve_mono)) &&
        !(c->miss_due_mono && mono >= c->miss_due_mono)) {
        /* the same snapshot as the last tick: the same triggers, every one of them seen, and
         * no look again due */
        nt = c->trig_n;
    } else if ((trigger = scan_triggers(c, s, pend, np, mono, &nt, &missed, &first_arrival,
                                        &last_arrival)) < 0) {
        free(all);
        free(own);
        return;
    }
    if (trigger) {
        if (!c->window_open_mono) {
            c->window_open_mono = first_arrival;
            c->last_trigger_mono = last_arrival;
            c->prepared = false;
        } else if (last_arrival > c->last_trigger_mono)
            c->last_trigger_mono = last_arrival;
        c->next_resolve_mono = mono + RESOLVE_EVERY_NS;
    }
    /* pods that missed the capacity planned for them: no window to wait for, they are
     * all known */
    if (c->window_open_mono && (missed || mono - c->last_trigger_mono >= c->o.batch_idle_ns ||
                                mono - c->window_open_mono >= c->o.batch_max_ns)) {
        int64_t waited = mono - c->window_open_mono;
        c->window_open_mono = 0;
        if (nt)
            provision(c, s, np, own, nown, waited);
    } else if (c->window_open_mono && nt)
        prepare_base(c, s); /* the window stays open: the batch's Nodes' part meanwhile */
    if (!nt)
        nw_simsnap_cache_drop(c->base); /* nothing pending: its memory back */
    tick_trim(c, nt, mono);
    free(all);
    free(own);
}

/* How long until the batch window closes (ns; < 0: no window open). */
int64_t nw_provisioning_next_deadline(const nw_provisioning_t *c, int64_t mono)
{
    if (!c->window_open_mono) {
        int64_t d = c->next_resolve_mono ? c->next_resolve_mono - mono : -1;
        if (c->miss_due_mono && (d < 0 || c->miss_due_mono - mono < d))
            d = c->miss_due_mono - mono;
        return d;
    }
    int64_t a = c->last_trigger_mono + c->o.batch_idle_ns - mono,
            b = c->window_open_mono + c->o.batch_max_ns - mono;
    /* a window whose close has passed (during a long pass) is due now, not "nothing" */
    return a < b ? (a < 0 ? 0 : a) : (b < 0 ? 0 : b);
}

bool nw_provisioning_waiting(nw_provisioning_t *c, const nw_kube_snap_t *s, int64_t mono)
{
    if (c->window_open_mono || (c->miss_due_mono && mono >= c->miss_due_mono) ||
        (c->trig_n && c->next_resolve_mono && mono >= c->next_resolve_mono))
        return true;
    const nw_kube_obj_t *const *pend;
    size_t np = nw_kube_cache_snap_pending_pods(s, &pend);
    for (size_t i = 0; i < np; i++)
        if (!seen(c, pend[i]->uid))
            return true;
    return false;
}

nw_nominate_t *nw_provisioning_nominator(nw_provisioning_t *p)
{
    return p ? p->nom : NULL;
}

nw_cohorts_t *nw_provisioning_cohorts(nw_provisioning_t *p)
{
    return p ? p->cohorts : NULL;
}
