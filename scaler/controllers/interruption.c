/* scaler/controllers/interruption.c — the interruption thread and event handling; see
 * interruption.h. */
#include "scaler/controllers/interruption.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "scaler/ctl/ctl.h"
#include "scaler/metrics/kmetrics.h"

#define NKINDS (NW_INTR_KINDS + 1) /* + one slot for messages that did not parse */
#define KIND_UNPARSEABLE NW_INTR_KINDS

enum { ACT_DELETE, ACT_CORDON, ACT_ICE, ACT_EVENT, NACTS };
static const char *const act_names[NACTS] = {"delete_nodeclaim", "cordon", "mark_unavailable",
                                             "event"};

struct nw_interruption {
    nw_ctl_deps_t *deps;
    nw_interruption_opts_t o;
    const char *queue; /* the source's name */
    pthread_t thread;
    int started;
    atomic_int stop;
    _Atomic uint64_t received[NKINDS], deleted[NKINDS], actions[NACTS];
    _Atomic uint64_t receive_errors, handle_errors, delete_errors, polls;
};

/* ---- lookups and the plan ---- */

static bool pid_is(const char *pid, const char *id)
{
    return pid && *pid && strcmp(nw_cloud_instance_id(pid), id) == 0;
}

const nw_kube_obj_t *nw_interruption_nodeclaim_for_instance(const nw_kube_snap_t *s, const char *id)
{
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (pid_is(o->provider_id, id))
            return o;
    }
    return NULL;
}

const nw_kube_obj_t *nw_interruption_node_for_instance(const nw_kube_snap_t *s, const char *id)
{
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        if (pid_is(o->provider_id, id))
            return o;
    }
    return NULL;
}

static void event_for(nw_interrupt_kind_t k, nw_interruption_action_t *a)
{
    a->type = "Warning";
    switch (k) {
    case NW_INTR_SPOT_INTERRUPTION:
        a->reason = "SpotInterrupted";
        a->message = "Spot interruption warning was triggered";
        break;
    case NW_INTR_REBALANCE:
        a->type = "Normal";
        a->reason = "SpotRebalanceRecommendation";
        a->message = "Spot rebalance recommendation was triggered";
        break;
    case NW_INTR_SCHEDULED_CHANGE:
        a->reason = "Unhealthy";
        a->message = "An unhealthy warning was triggered (scheduled change)";
        break;
    case NW_INTR_STOPPED:
        a->reason = "InstanceStopping";
        a->message = "Instance is stopping";
        break;
    case NW_INTR_TERMINATED:
        a->reason = "InstanceTerminating";
        a->message = "Instance is terminating";
        break;
    case NW_INTR_CAPACITY_RESERVATION:
        a->reason = "CapacityReservationInterrupted";
        a->message = "Capacity reservation interruption warning was triggered";
        break;
    default:
        a->reason = a->message = NULL;
    }
}

size_t nw_interruption_plan(const nw_kube_snap_t *s, const nw_interrupt_event_t *ev,
                            nw_interruption_action_t *out, size_t cap)
{
    size_t n = 0;
    if (ev->kind == NW_INTR_NOOP)
        return 0;
    for (size_t i = 0; i < ev->nids && n < cap; i++) {
        nw_interruption_action_t *a = &out[n++];
        memset(a, 0, sizeof *a);
        snprintf(a->instance_id, sizeof a->instance_id, "%s", ev->ids[i]);
        a->nodeclaim = nw_interruption_nodeclaim_for_instance(s, ev->ids[i]);
        a->node = nw_interruption_node_for_instance(s, ev->ids[i]);
        if (!a->nodeclaim)
            continue; /* not ours (or already gone): nothing to do */
        event_for(ev->kind, a);
        if (!nw_interrupt_kind_deletes(ev->kind))
            continue;
        a->delete_claim = !a->nodeclaim->terminating;
        if (ev->kind == NW_INTR_SPOT_INTERRUPTION) {
            a->cordon =
                a->node && !a->node->terminating &&
                !nw_node_meta_has_taint(&a->node->node->m, NW_TAINT_DISRUPTED, "NoSchedule");
            const nw_node_meta_t *nc = &a->nodeclaim->nodeclaim->m;
            const char *ct = nw_node_meta_label(nc, "karpenter.sh/capacity-type");
            const char *it = nw_node_meta_label(nc, "node.kubernetes.io/instance-type");
            const char *z = nw_node_meta_label(nc, "topology.kubernetes.io/zone");
            if (it && z) {
                a->mark_ice = 1;
                snprintf(a->ice_ct, sizeof a->ice_ct, "%s", ct && *ct ? ct : "spot");
                snprintf(a->ice_type, sizeof a->ice_type, "%s", it);
                snprintf(a->ice_zone, sizeof a->ice_zone, "%s", z);
            }
        }
    }
    return n;
}

/* ---- acting ---- */

static bool may_write(nw_interruption_t *h)
{
    return !atomic_load(&h->stop) && nw_ctl_may_write(h->deps);
}

static int mutate_cordon(cJSON *node, void *ud)
{
    (void)ud;
    if (nw_json_get(nw_json_get(node, "metadata"), "deletionTimestamp"))
        return 1;
    return nw_ctl_disrupted_taint(node, 1) == 1 ? 0 : 1;
}

/* Carry out one action; NW_OK when done (or nothing to do). */
static NW_MUST_USE nw_rc_t act(nw_interruption_t *h, const nw_interrupt_event_t *ev,
                               const nw_interruption_action_t *a)
{
    nw_err_t err = {0};
    if (!a->nodeclaim) {
        nw_log_info("interruption", "no NodeClaim for the instance; nothing to do",
                    NW_LS("kind", nw_interrupt_kind_name(ev->kind)),
                    NW_LS("instance", a->instance_id));
        return NW_OK;
    }
    if (!may_write(h))
        return nw_err_set(&err, NW_EINVAL, NULL, "not the leader");
    const char *nc = a->nodeclaim->name;
    nw_log_info("interruption", "interruption event",
                NW_LS("kind", nw_interrupt_kind_name(ev->kind)), NW_LS("instance", a->instance_id),
                NW_LS("nodeclaim", nc), NW_LS("node", a->node ? a->node->name : ""),
                NW_LB("delete", a->delete_claim));
    if (a->reason) {
        nw_ctl_obj_event_rec(h->deps->rec, &nw_kube_client_res_nodeclaims, a->nodeclaim, a->type,
                             a->reason, a->message);
        if (a->node)
            nw_ctl_obj_event_rec(h->deps->rec, &nw_kube_client_res_nodes, a->node, a->type,
                                 a->reason, a->message);
        atomic_fetch_add(&h->actions[ACT_EVENT], 1);
    }
    if (a->mark_ice && h->o.ice) {
        nw_ice_mark(h->o.ice, a->ice_ct, a->ice_type, a->ice_zone, nw_clock_mono(h->deps->clock));
        atomic_fetch_add(&h->actions[ACT_ICE], 1);
        nw_log_info("interruption", "offering marked unavailable", NW_LS("capacityType", a->ice_ct),
                    NW_LS("instanceType", a->ice_type), NW_LS("zone", a->ice_zone));
    }
    if (a->cordon) {
        if (nw_kube_write_update_retry(h->deps->kube, &nw_kube_client_res_nodes, NULL,
                                       a->node->name, 0, mutate_cordon, NULL, 5, NULL,
                                       &err) != NW_OK &&
            err.rc != NW_ENOTFOUND) {
            nw_log_warn("interruption", "cannot cordon the node", NW_LS("node", a->node->name),
                        NW_LS("error", err.msg));
            return err.rc;
        }
        nw_err_clear(&err);
        atomic_fetch_add(&h->actions[ACT_CORDON], 1);
        nw_log_info("interruption", "cordoned the node", NW_LS("node", a->node->name),
                    NW_LS("taint", NW_TAINT_DISRUPTED ":NoSchedule"));
    }
    if (a->delete_claim) {
        if (!may_write(h))
            return NW_EINVAL;
        nw_kube_delete_opts_t d = {.propagation = NULL,
                                   .grace_seconds = -1,
                                   .uid = a->nodeclaim->uid[0] ? a->nodeclaim->uid : NULL};
        nw_rc_t rc = nw_kube_write_delete(h->deps->kube, &nw_kube_client_res_nodeclaims, NULL, nc,
                                          &d, NULL, &err);
        if (rc != NW_OK && rc != NW_ECONFLICT) { /* conflict: a different object by now */
            nw_log_warn("interruption", "cannot delete the NodeClaim", NW_LS("nodeclaim", nc),
                        NW_LS("error", err.msg));
            return rc;
        }
        atomic_fetch_add(&h->actions[ACT_DELETE], 1);
        nw_kmetrics_disrupted_of(h->deps->series, nw_kmetrics_message_kind(ev->kind),
                                 &a->nodeclaim->nodeclaim->m);
        char msg[160];
        snprintf(msg, sizeof msg, "Interruption (%s) triggered termination of the NodeClaim",
                 nw_interrupt_kind_name(ev->kind));
        nw_ctl_obj_event_rec(h->deps->rec, &nw_kube_client_res_nodeclaims, a->nodeclaim, "Warning",
                             "TerminatingOnInterruption", msg);
        nw_log_info("interruption", "deleted the NodeClaim", NW_LS("nodeclaim", nc),
                    NW_LS("kind", nw_interrupt_kind_name(ev->kind)),
                    NW_LS("instance", a->instance_id));
    }
    return NW_OK;
}

/* Handle one message; true when it may be deleted from the queue. */
static bool handle(nw_interruption_t *h, const nw_interrupt_msg_t *m, int *kind)
{
    const nw_interrupt_event_t ev = m->ev;
    *kind = KIND_UNPARSEABLE;
    if (!m->parsed) {
        atomic_fetch_add(&h->received[KIND_UNPARSEABLE], 1);
        nw_log_warn("interruption", "message could not be parsed; deleting it",
                    NW_LS("messageId", m->id), NW_LS("field", m->perr.path),
                    NW_LS("error", m->perr.msg));
        return true;
    }
    atomic_fetch_add(&h->received[ev.kind], 1);
    const char *mt[] = {nw_kmetrics_message_kind(ev.kind)};
    nw_series_add(h->deps->series, &NW_KMETRICS_INTERRUPTION_RECEIVED, mt, 1);
    if (ev.time_ns > 0)
        nw_series_observe(h->deps->series, &NW_KMETRICS_INTERRUPTION_QUEUE_DURATION, NULL,
                          (double)(nw_clock_now(h->deps->clock) - ev.time_ns) / 1e9);
    *kind = ev.kind;
    if (ev.kind == NW_INTR_NOOP) {
        nw_log_debug("interruption", "message of no interest", NW_LS("messageId", m->id),
                     NW_LS("source", ev.source), NW_LS("detailType", ev.detail_type));
        return true;
    }
    nw_kube_snap_t *s = nw_kube_cache_snapshot(h->deps->cache);
    if (!s)
        return false;
    nw_interruption_action_t acts[NW_INTR_MAX_IDS];
    size_t n = nw_interruption_plan(s, &ev, acts, NW_INTR_MAX_IDS);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        nw_ctl_fault(h->deps, "interruption-acting", acts[i].instance_id); /* crash point */
        if (act(h, &ev, &acts[i]) != NW_OK)
            ok = false;
    }
    nw_kube_cache_snap_release(s);
    if (!ok)
        atomic_fetch_add(&h->handle_errors, 1);
    return ok;
}

static void nap(nw_interruption_t *h, int64_t ms)
{
    while (ms > 0 && !atomic_load(&h->stop)) {
        int64_t step = ms > 100 ? 100 : ms;
        struct timespec ts = {0, (long)(step * NW_NS_PER_MS)};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

int nw_interruption_poll(nw_interruption_t *h)
{
    nw_interrupt_batch_t msgs;
    nw_cloud_error_t ce;
    nw_err_t err = {0};
    memset(&ce, 0, sizeof ce);
    atomic_fetch_add(&h->polls, 1);
    if (h->o.source->ops->receive(h->o.source, &msgs, &ce, &err) != NW_OK) {
        if (atomic_load(&h->stop))
            return -1;
        atomic_fetch_add(&h->receive_errors, 1);
        nw_log_every(30, NW_LOG_WARN, "interruption", "cannot receive from the queue",
                     NW_LS("queue", h->queue), NW_LS("class", nw_cloud_err_kind_name(ce.kind)),
                     NW_LS("code", ce.code), NW_LS("error", err.msg));
        return -1;
    }
    /* a batch received just before the Lease was lost is left to the next leader
     * (redelivered after the visibility timeout) */
    for (size_t i = 0; i < msgs.n && may_write(h); i++) {
        int k;
        if (!handle(h, &msgs.v[i], &k))
            continue; /* redelivered after the visibility timeout */
        nw_ctl_fault(h->deps, "interruption-acked", msgs.v[i].id); /* crash point (ctl.h) */
        nw_err_clear(&err);
        if (h->o.source->ops->ack(h->o.source, &msgs.v[i], &ce, &err) != NW_OK) {
            atomic_fetch_add(&h->delete_errors, 1);
            nw_log_warn("interruption", "cannot delete the message",
                        NW_LS("messageId", msgs.v[i].id), NW_LS("code", ce.code),
                        NW_LS("error", err.msg));
        } else {
            atomic_fetch_add(&h->deleted[k], 1);
            nw_series_add(h->deps->series, &NW_KMETRICS_INTERRUPTION_DELETED, NULL, 1);
        }
    }
    int n = (int)msgs.n;
    nw_interrupt_batch_free(&msgs);
    return n;
}

static void *intr_main(void *arg)
{
    nw_interruption_t *h = arg;
    int64_t backoff_ms = 0;
    while (!atomic_load(&h->stop)) {
        if (!atomic_load(&h->deps->leading) || !nw_kube_cache_has_synced(h->deps->cache)) {
            nap(h, 500);
            continue;
        }
        if (nw_interruption_poll(h) >= 0) {
            backoff_ms = 0;
            continue;
        }
        if (atomic_load(&h->stop))
            break;
        backoff_ms = backoff_ms ? backoff_ms * 2 : 1000;
        if (backoff_ms > 30000)
            backoff_ms = 30000;
        nap(h, backoff_ms);
    }
    return NULL;
}

nw_rc_t nw_interruption_new(nw_ctl_deps_t *deps, const nw_interruption_opts_t *o,
                            nw_interruption_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!deps || !deps->kube || !deps->cache || !deps->rec || !deps->clock || !o->source)
        return nw_err_set(err, NW_EINVAL, "interruption", "missing collaborators");
    nw_interruption_t *h = calloc(1, sizeof *h);
    if (!h)
        return nw_err_set(err, NW_ENOMEM, "interruption", "out of memory");
    h->deps = deps;
    h->o = *o;
    h->queue = o->source->name ? o->source->name : "";
    h->o.source->ops->set_abort(h->o.source, &h->stop);
    *out = h;
    return NW_OK;
}

nw_rc_t nw_interruption_start(nw_interruption_t *h, nw_err_t *err)
{
    if (h->started)
        return NW_OK;
    if (pthread_create(&h->thread, NULL, intr_main, h) != 0)
        return nw_err_set(err, NW_ENOMEM, "interruption", "cannot start the interruption thread");
    pthread_setname_np(h->thread, "nw-interrupt");
    h->started = 1;
    nw_log_info("interruption", "interruption handling started", NW_LS("queue", h->queue));
    return NW_OK;
}

void nw_interruption_free(nw_interruption_t *h)
{
    if (!h)
        return;
    atomic_store(&h->stop, 1);
    if (h->started)
        pthread_join(h->thread, NULL);
    h->o.source->ops->set_abort(h->o.source, NULL);
    free(h);
}

static NW_MUST_USE nw_rc_t series(nw_buf_t *out, const char *name, const char *help,
                                  const char *labelk, const char *const *labels,
                                  _Atomic uint64_t *v, size_t n)
{
    nw_rc_t rc = nw_buf_addf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (size_t i = 0; i < n && rc == NW_OK; i++)
        rc = nw_buf_addf(out, "%s{%s=\"%s\"} %llu\n", name, labelk, labels[i],
                         (unsigned long long)atomic_load(&v[i]));
    return rc;
}

nw_rc_t nw_interruption_metrics(nw_interruption_t *h, nw_buf_t *out)
{
    if (!h)
        return NW_OK;
    const char *kinds[NKINDS];
    for (int k = 0; k < NW_INTR_KINDS; k++)
        kinds[k] = nw_interrupt_kind_name((nw_interrupt_kind_t)k);
    kinds[KIND_UNPARSEABLE] = "unparseable";
    nw_rc_t rc = series(out, "nodewarden_interruption_received_messages_total",
                        "Interruption queue messages received, by kind.", "kind", kinds,
                        h->received, NKINDS);
    if (rc == NW_OK)
        rc = series(out, "nodewarden_interruption_deleted_messages_total",
                    "Interruption queue messages deleted after handling, by kind.", "kind", kinds,
                    h->deleted, NKINDS);
    if (rc == NW_OK)
        rc = series(out, "nodewarden_interruption_actions_total",
                    "Actions taken on interruption messages.", "action", act_names, h->actions,
                    NACTS);
    const char *what[] = {"receive", "handle", "delete"};
    _Atomic uint64_t errs[3];
    atomic_init(&errs[0], atomic_load(&h->receive_errors));
    atomic_init(&errs[1], atomic_load(&h->handle_errors));
    atomic_init(&errs[2], atomic_load(&h->delete_errors));
    if (rc == NW_OK)
        rc = series(out, "nodewarden_interruption_errors_total",
                    "Interruption queue failures (receive, message handling, delete).", "op", what,
                    errs, 3);
    if (rc == NW_OK)
        rc = nw_buf_addf(out,
                         "# HELP nodewarden_interruption_polls_total ReceiveMessage calls.\n"
                         "# TYPE nodewarden_interruption_polls_total counter\n"
                         "nodewarden_interruption_polls_total %llu\n",
                         (unsigned long long)atomic_load(&h->polls));
    return rc;
}
