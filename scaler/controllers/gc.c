/* scaler/controllers/gc.c — leaked instances and orphaned NodeClaims; see gc.h. */
#include "scaler/controllers/gc.h"
#include "scaler/metrics/kmetrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/prom.h"
#include "scaler/controllers/instindex.h"

/* One pass handed to the worker: what the reconcile thread gave it (a held snapshot, a copy
 * of the in-flight memory, the time) and what the worker made of it (the cloud's list and
 * the plan, which borrows from both). */
typedef struct {
    nw_kube_snap_t *snap; /* held */
    char **names, **ids;  /* owned copies of the in-flight names and providerIDs */
    size_t nnames, nids;
    int64_t now_ns;
    /* the worker's answer */
    bool listed; /* the list succeeded */
    bool planned;
    nw_err_t err;
    nw_cloud_instances_t list;
    nw_gc_plan_t plan;
} job_t;

struct nw_gc {
    nw_ctl_deps_t *deps;
    const nw_inflight_t *inflight; /* borrowed: what this process is creating or launching */
    nw_gc_opts_t o;
    int64_t next_mono; /* 0: at once */
    int good_passes;
    _Atomic uint64_t passes, failed_passes, terminated, nodes_deleted, claims_deleted, errors;
    /* the worker (started on the first pass): at most one job at a time, queued, being
     * run, or done and waiting for the reconcile thread's next tick */
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    pthread_t th;
    bool started, stop;
    job_t *queued, *running, *done;
};

nw_gc_t *nw_gc_new(nw_ctl_deps_t *deps, const nw_inflight_t *inflight, const nw_gc_opts_t *o)
{
    nw_gc_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->deps = deps;
    g->inflight = inflight;
    if (o)
        g->o = *o;
    else
        g->o.launch_grace_ns = -1;
    if (g->o.initial_interval_ns <= 0)
        g->o.initial_interval_ns = 10 * NW_NS_PER_SEC;
    if (g->o.interval_ns <= 0)
        g->o.interval_ns = 120 * NW_NS_PER_SEC;
    if (g->o.fast_passes <= 0)
        g->o.fast_passes = 20;
    if (g->o.launch_grace_ns < 0)
        g->o.launch_grace_ns = 30 * NW_NS_PER_SEC;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->work, NULL);
    pthread_cond_init(&g->idle, NULL);
    return g;
}

static void job_free(job_t *j)
{
    if (!j)
        return;
    nw_gc_plan_free(&j->plan);
    nw_cloud_instances_free(&j->list);
    for (size_t k = 0; k < j->nnames; k++)
        free(j->names[k]);
    for (size_t k = 0; k < j->nids; k++)
        free(j->ids[k]);
    free(j->names);
    free(j->ids);
    nw_kube_cache_snap_release(j->snap);
    free(j);
}

void nw_gc_free(nw_gc_t *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->mu);
    if (g->started)
        pthread_join(g->th, NULL);
    job_free(g->queued);
    job_free(g->done);
    pthread_cond_destroy(&g->idle);
    pthread_cond_destroy(&g->work);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* ---- the plan ---- */

static bool registered(const nw_kube_obj_t *nc)
{
    return nc->nodeclaim &&
           nw_node_meta_condition_status(&nc->nodeclaim->m, "Registered") == NW_NODE_COND_TRUE;
}

static bool node_ready(const nw_kube_obj_t *node)
{
    return node->node && node->node->ready == NW_NODE_COND_TRUE;
}

/* What this process is creating or launching, sorted for binary search: the NodeClaim
 * names and the instance ids of the providerIDs. */
typedef struct {
    const char **names, **ids;
    size_t nnames, nids;
} inflight_sorted_t;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool sorted_has(const char *const *v, size_t n, const char *s)
{
    return s && n && bsearch(&s, v, n, sizeof *v, cmp_str);
}

static nw_rc_t inflight_sort(const nw_gc_inflight_t *f, inflight_sorted_t *out)
{
    memset(out, 0, sizeof *out);
    if (!f)
        return NW_OK;
    out->names = malloc((f->nnames + 1) * sizeof *out->names);
    out->ids = malloc((f->nids + 1) * sizeof *out->ids);
    if (!out->names || !out->ids) {
        free(out->names);
        free(out->ids);
        return NW_ENOMEM;
    }
    for (size_t k = 0; k < f->nnames; k++)
        if (f->names[k])
            out->names[out->nnames++] = f->names[k];
    for (size_t k = 0; k < f->nids; k++)
        if (f->ids[k] && *f->ids[k])
            out->ids[out->nids++] = nw_cloud_instance_id(f->ids[k]);
    qsort(out->names, out->nnames, sizeof *out->names, cmp_str);
    qsort(out->ids, out->nids, sizeof *out->ids, cmp_str);
    return NW_OK;
}

static bool inflight(const inflight_sorted_t *f, const nw_cloud_instance_t *i)
{
    return sorted_has(f->names, f->nnames, nw_cloud_instance_tag(i, NW_TAG_NODECLAIM)) ||
           sorted_has(f->ids, f->nids, i->id);
}

/* Is an instance with this id in the list, and not terminated? */
static bool instance_present(const nw_cloud_instances_t *cloud, const size_t *sorted,
                             const char *id)
{
    for (size_t j = nw_instindex_cloud_lower(cloud, sorted, id);
         j < cloud->n && strcmp(cloud->v[sorted[j]].id, id) == 0; j++)
        if (strcmp(cloud->v[sorted[j]].state, "terminated") != 0)
            return true;
    return false;
}

/* The lookups of a plan: Nodes and NodeClaims by instance id, the cloud list sorted by
 * id, the in-flight memory sorted (each built once per pass, not walked per instance). */
typedef struct {
    nw_instindex_t nodes, claims;
    size_t *cloud;
    inflight_sorted_t f;
} lookups_t;

static void lookups_free(lookups_t *l)
{
    nw_instindex_free(&l->nodes);
    nw_instindex_free(&l->claims);
    free(l->cloud);
    free(l->f.names);
    free(l->f.ids);
}

nw_rc_t nw_gc_plan(const nw_kube_snap_t *s, const nw_cloud_instances_t *cloud,
                   const nw_gc_inflight_t *f, int64_t now_ns, int64_t grace_ns, nw_gc_plan_t *out)
{
    memset(out, 0, sizeof *out);
    size_t nclaims = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    out->leaked = calloc(cloud->n ? cloud->n : 1, sizeof *out->leaked);
    out->orphans = calloc(nclaims ? nclaims : 1, sizeof *out->orphans);
    lookups_t ix;
    memset(&ix, 0, sizeof ix);
    if (!out->leaked || !out->orphans || nw_instindex_build(&ix.nodes, s, NW_KUBE_NODES) != NW_OK ||
        nw_instindex_build(&ix.claims, s, NW_KUBE_NODECLAIMS) != NW_OK ||
        (cloud->n && !(ix.cloud = nw_instindex_cloud_sort(cloud))) ||
        inflight_sort(f, &ix.f) != NW_OK) {
        lookups_free(&ix);
        nw_gc_plan_free(out);
        return NW_ENOMEM;
    }
    /* leaked instances */
    for (size_t k = 0; k < cloud->n; k++) {
        const nw_cloud_instance_t *i = &cloud->v[k];
        if (strcmp(i->state, "shutting-down") == 0 || strcmp(i->state, "terminated") == 0)
            continue;
        if (!i->launch_ns || now_ns - i->launch_ns <= grace_ns)
            continue; /* unknown launch time, or an in-flight launch */
        if (nw_instindex_find(&ix.claims, i->id) || inflight(&ix.f, i))
            continue;
        const char *name = nw_cloud_instance_tag(i, NW_TAG_NODECLAIM);
        const nw_kube_obj_t *owner =
            name ? nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, name) : NULL;
        if (owner && !owner->provider_id[0] && !owner->terminating)
            continue; /* its NodeClaim is being launched; the status write is on its way */
        nw_gc_leak_t *l = &out->leaked[out->nleaked++];
        snprintf(l->instance_id, sizeof l->instance_id, "%s", i->id);
        snprintf(l->provider_id, sizeof l->provider_id, "%s", i->provider_id);
        snprintf(l->nodeclaim, sizeof l->nodeclaim, "%s", name ? name : "");
        l->node = nw_instindex_find(&ix.nodes, i->id);
    }
    /* orphaned NodeClaims */
    for (size_t k = 0; k < nclaims; k++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, k);
        if (nc->terminating || !nc->provider_id[0])
            continue;
        const char *id = nw_cloud_instance_id(nc->provider_id);
        if (instance_present(cloud, ix.cloud, id) || !registered(nc))
            continue;
        const nw_kube_obj_t *node = nw_instindex_find(&ix.nodes, id);
        if (node && node_ready(node))
            continue; /* the kubelet still reports: trust it over the list */
        out->orphans[out->norphans++] = nc;
    }
    lookups_free(&ix);
    return NW_OK;
}

void nw_gc_plan_free(nw_gc_plan_t *p)
{
    if (!p)
        return;
    free(p->leaked);
    free(p->orphans);
    memset(p, 0, sizeof *p);
}

/* ---- the pass ---- */

/* Is the instance of this leak one that this process is creating or launching now? (The
 * plan was made from a copy of the in-flight memory taken when the pass was handed over;
 * a claim remembered since then is respected too.) */
static bool inflight_now(const nw_gc_t *g, const nw_gc_leak_t *l)
{
    for (const nw_inflight_claim_t *m = (g->inflight ? g->inflight->head : NULL); m; m = m->next) {
        if (m->deleted)
            continue;
        if (l->nodeclaim[0] && strcmp(m->name, l->nodeclaim) == 0)
            return true;
        if (m->launched && m->provider_id[0] &&
            strcmp(nw_cloud_instance_id(m->provider_id), l->instance_id) == 0)
            return true;
    }
    return false;
}

/* Terminate the leaked instances (no NodeClaim owns them) and delete their Nodes; false
 * when one of them failed. cur: the snapshot of the tick applying the plan. */
static bool terminate_leaked(nw_gc_t *g, const nw_gc_plan_t *p, const nw_kube_snap_t *cur)
{
    nw_ctl_deps_t *c = g->deps;
    nw_err_t err = {0};
    bool ok = true;
    for (size_t i = 0; i < p->nleaked && nw_ctl_may_write(c); i++) {
        const nw_gc_leak_t *l = &p->leaked[i];
        if (inflight_now(g, l) ||
            (cur && nw_kube_cache_snap_nodeclaim_by_provider_id(cur, l->provider_id)))
            continue; /* claimed since the plan was made */
        nw_err_clear(&err);
        if (c->cloud->ops->terminate(c->cloud, l->instance_id, &err) != NW_OK) {
            ok = false;
            atomic_fetch_add(&g->errors, 1);
            nw_log_warn("gc", "cannot terminate a leaked instance",
                        NW_LS("instance", l->instance_id), NW_LS("error", err.msg));
            continue;
        }
        atomic_fetch_add(&g->terminated, 1);
        nw_log_info("gc", "terminated a leaked instance (no NodeClaim owns it)",
                    NW_LS("instance", l->instance_id), NW_LS("providerID", l->provider_id),
                    NW_LS("node", l->node ? l->node->name : ""));
        if (l->node && !l->node->terminating) {
            nw_ctl_obj_event_rec(c->rec, &nw_kube_client_res_nodes, l->node, "Warning",
                                 "GarbageCollected",
                                 "The instance is owned by no NodeClaim; it was terminated");
            nw_err_clear(&err);
            if (nw_kube_write_delete(c->kube, &nw_kube_client_res_nodes, NULL, l->node->name, NULL,
                                     NULL, &err) != NW_OK) {
                ok = false;
                atomic_fetch_add(&g->errors, 1);
                nw_log_warn("gc", "cannot delete the node of a leaked instance",
                            NW_LS("node", l->node->name), NW_LS("error", err.msg));
            } else
                atomic_fetch_add(&g->nodes_deleted, 1);
        }
    }
    return ok;
}

/* Delete the NodeClaims whose instance is gone and whose node is not Ready; false when one
 * of them failed. cur: the snapshot of the tick applying the plan. */
static bool delete_orphans(nw_gc_t *g, const nw_gc_plan_t *p, const nw_kube_snap_t *cur)
{
    nw_ctl_deps_t *c = g->deps;
    nw_err_t err = {0};
    bool ok = true;
    for (size_t i = 0; i < p->norphans && nw_ctl_may_write(c); i++) {
        const nw_kube_obj_t *nc = p->orphans[i];
        const nw_kube_obj_t *now =
            cur ? nw_kube_cache_snap_get(cur, NW_KUBE_NODECLAIMS, NULL, nc->name) : nc;
        if (!now || now->terminating || strcmp(now->uid, nc->uid) != 0)
            continue; /* deleted or replaced since the plan was made */
        char msg[256];
        snprintf(
            msg, sizeof msg,
            "The instance %s no longer exists and the node is not Ready; deleting the NodeClaim",
            nw_cloud_instance_id(nc->provider_id));
        nw_ctl_obj_event_rec(c->rec, &nw_kube_client_res_nodeclaims, nc, "Warning",
                             "GarbageCollected", msg);
        nw_kube_delete_opts_t d = {.grace_seconds = -1, .uid = nc->uid[0] ? nc->uid : NULL};
        nw_err_clear(&err);
        nw_rc_t rc = nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name,
                                          &d, NULL, &err);
        if (rc != NW_OK && rc != NW_ECONFLICT) {
            ok = false;
            atomic_fetch_add(&g->errors, 1);
            nw_log_warn("gc", "cannot delete an orphaned NodeClaim", NW_LS("nodeclaim", nc->name),
                        NW_LS("error", err.msg));
            continue;
        }
        atomic_fetch_add(&g->claims_deleted, 1);
        if (nc->nodeclaim)
            nw_kmetrics_disrupted_of(c->series, "garbage_collected", &nc->nodeclaim->m);
        nw_log_info("gc", "deleted a NodeClaim whose instance is gone",
                    NW_LS("nodeclaim", nc->name), NW_LS("providerID", nc->provider_id));
    }
    return ok;
}

/* The worker's part of a pass: list the cloud's instances and make the plan. Reads only
 * the job and the options (the cloud's list is safe from any thread: cloud.h). */
static void job_run(const nw_gc_t *g, job_t *j)
{
    if (g->deps->cloud->ops->list(g->deps->cloud, &j->list, &j->err) != NW_OK)
        return;
    j->listed = true;
    nw_gc_inflight_t f = {(const char *const *)j->names, j->nnames, (const char *const *)j->ids,
                          j->nids};
    j->planned =
        nw_gc_plan(j->snap, &j->list, &f, j->now_ns, g->o.launch_grace_ns, &j->plan) == NW_OK;
}

static void *worker(void *arg)
{
    nw_gc_t *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->stop && !g->queued)
            pthread_cond_wait(&g->work, &g->mu);
        if (g->stop)
            break;
        job_t *j = g->running = g->queued;
        g->queued = NULL;
        pthread_mutex_unlock(&g->mu);
        job_run(g, j);
        pthread_mutex_lock(&g->mu);
        g->running = NULL;
        g->done = j;
        pthread_cond_broadcast(&g->idle);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* A job for snapshot s: the snapshot held, the in-flight memory copied. NULL on OOM. */
static job_t *job_new(nw_gc_t *g, const nw_kube_snap_t *s)
{
    size_t nm = 0;
    for (const nw_inflight_claim_t *m = (g->inflight ? g->inflight->head : NULL); m; m = m->next)
        nm++;
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->names = calloc(nm ? nm : 1, sizeof *j->names);
    j->ids = calloc(nm ? nm : 1, sizeof *j->ids);
    if (!j->names || !j->ids) {
        job_free(j);
        return NULL;
    }
    for (const nw_inflight_claim_t *m = (g->inflight ? g->inflight->head : NULL); m; m = m->next) {
        if (m->deleted)
            continue;
        if (!(j->names[j->nnames] = strdup(m->name))) {
            job_free(j);
            return NULL;
        }
        j->nnames++;
        if (m->launched && m->provider_id[0]) {
            if (!(j->ids[j->nids] = strdup(m->provider_id))) {
                job_free(j);
                return NULL;
            }
            j->nids++;
        }
    }
    j->snap = nw_kube_cache_snap_hold(s);
    j->now_ns = nw_clock_now(g->deps->clock);
    if (!j->snap) {
        job_free(j);
        return NULL;
    }
    return j;
}

/* The reconcile thread's end of a pass: apply the worker's plan (leader only) and schedule
 * the next pass. cur: the tick's snapshot. */
static void job_apply(nw_gc_t *g, job_t *j, const nw_kube_snap_t *cur)
{
    nw_ctl_deps_t *c = g->deps;
    if (!j->listed) {
        atomic_fetch_add(&g->failed_passes, 1);
        nw_log_every(60, NW_LOG_WARN, "gc", "cannot list the cluster's instances",
                     NW_LS("error", j->err.msg));
        g->next_mono = nw_clock_mono(c->clock) + g->o.initial_interval_ns;
        return;
    }
    if (!j->planned) {
        g->next_mono = nw_clock_mono(c->clock) + g->o.initial_interval_ns;
        return;
    }
    bool leaked_ok = terminate_leaked(g, &j->plan, cur);
    bool orphans_ok = delete_orphans(g, &j->plan, cur);
    atomic_fetch_add(&g->passes, 1);
    if (leaked_ok && orphans_ok)
        g->good_passes++;
    g->next_mono =
        nw_clock_mono(c->clock) +
        (g->good_passes < g->o.fast_passes ? g->o.initial_interval_ns : g->o.interval_ns);
}

/* Hand a pass over to the worker (started on the first one); when no thread can be
 * started, run it here. */
static void hand_over(nw_gc_t *g, const nw_kube_snap_t *s)
{
    job_t *j = job_new(g, s);
    if (!j) {
        g->next_mono = nw_clock_mono(g->deps->clock) + g->o.initial_interval_ns;
        return;
    }
    pthread_mutex_lock(&g->mu);
    if (!g->started && pthread_create(&g->th, NULL, worker, g) == 0) {
        g->started = true;
        pthread_setname_np(g->th, "nw-gc");
    }
    if (g->started) {
        g->queued = j;
        pthread_cond_signal(&g->work);
        pthread_mutex_unlock(&g->mu);
        return;
    }
    pthread_mutex_unlock(&g->mu);
    job_run(g, j);
    job_apply(g, j, s);
    job_free(j);
}

void nw_gc_tick(nw_gc_t *g, const nw_kube_snap_t *s)
{
    if (!g)
        return;
    nw_ctl_deps_t *c = g->deps;
    pthread_mutex_lock(&g->mu);
    job_t *done = g->done;
    g->done = NULL;
    bool busy = g->queued || g->running;
    pthread_mutex_unlock(&g->mu);
    if (done) {
        if (nw_ctl_may_write(c)) /* a pass finished after the lead was lost is dropped */
            job_apply(g, done, s);
        job_free(done);
    }
    if (busy || !nw_ctl_may_write(c))
        return;
    int64_t now = nw_clock_mono(c->clock);
    if (g->next_mono && now < g->next_mono)
        return;
    if (!g->next_mono) {
        /* first tick of a term: start after one short interval, so that claims being
         * launched when the Lease was won have written their status */
        g->next_mono = now + g->o.initial_interval_ns;
        return;
    }
    hand_over(g, s);
}

void nw_gc_wait(nw_gc_t *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    while (g->queued || g->running)
        pthread_cond_wait(&g->idle, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

nw_rc_t nw_gc_metrics(nw_gc_t *g, nw_buf_t *out)
{
    if (!g)
        return NW_OK;
    const nw_ctl_counter_t v[] = {
        {"nodewarden_gc_passes_total", "Garbage-collection passes run.", &g->passes},
        {"nodewarden_gc_failed_passes_total",
         "Garbage-collection passes that could not list the instances.", &g->failed_passes},
        {"nodewarden_gc_instances_terminated_total",
         "Leaked instances (owned by no NodeClaim) terminated.", &g->terminated},
        {"nodewarden_gc_nodes_deleted_total", "Nodes of leaked instances deleted.",
         &g->nodes_deleted},
        {"nodewarden_gc_nodeclaims_deleted_total",
         "NodeClaims deleted because their instance is gone.", &g->claims_deleted},
        {"nodewarden_gc_errors_total", "Garbage-collection writes that failed.", &g->errors},
    };
    return nw_ctl_counters_write(out, v, sizeof v / sizeof *v);
}
