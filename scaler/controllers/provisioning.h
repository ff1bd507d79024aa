/*
 * scaler/controllers/provisioning.h — the provisioner: the batch window over pending
 * pods (settings.batchIdleDuration / batchMaxDuration), the scheduling simulation on
 * the cluster input (scaler/state/simsnap.h), FailedScheduling events, nominations (also
 * written to the pods' status.nominatedNodeName once their Node exists, nominate.h), and
 * NodeClaims created and launched through scaler/nodeclaim/nodeclaim.h.
 *
 * State: nw_provisioning_t — the batch window (when it opened, the last trigger, the next look
 * at pods still pending), the pending pod uids already counted, the solve counter. It
 * creates and launches through the nw_nodeclaim_t it is given and reads and prunes the shared
 * in-flight and nomination memory (scaler/ctl/ctl.h nw_ctl_shared_t).
 * Ownership: nw_provisioning_new / nw_provisioning_free (loop.c). Thread: the reconcile thread,
 * except nw_provisioning_metrics (any thread; atomics).
 */
#ifndef NW_SCALER_CONTROLLERS_PROVISIONING_H
#define NW_SCALER_CONTROLLERS_PROVISIONING_H

#include <stdint.h>

#include "common/buf.h"
#include "scaler/controllers/cohort.h"
#include "scaler/controllers/nominate.h"
#include "scaler/ctl/ctl.h"
#include "scaler/nodeclaim/nodeclaim.h"

typedef struct {
    int64_t batch_idle_ns; /* settings.batchIdleDuration */
    int64_t batch_max_ns;  /* settings.batchMaxDuration */
    int repack;            /* scaler.repack: re-pack interchangeable NodeClaims (nw_sched_opts_t) */
    int static_capacity;   /* feature gate StaticCapacity: hold static NodePools at replicas */
} nw_provisioning_opts_t;

typedef struct nw_provisioning nw_provisioning_t;

/** New (NULL on OOM); deps, claims and mem are borrowed and outlive it. */
nw_provisioning_t *nw_provisioning_new(nw_ctl_deps_t *deps, nw_nodeclaim_t *claims,
                                       nw_ctl_shared_t *mem, const nw_provisioning_opts_t *o);
void nw_provisioning_free(nw_provisioning_t *p);

/** One provisioner pass on a snapshot: batch window bookkeeping; when the window
 * closes, place the pending pods and create and launch NodeClaims; also launch
 * every NodeClaim that exists without a providerID (once: instances tagged
 * karpenter.sh/nodeclaim=<name> are looked up first). */
void nw_provisioning_tick(nw_provisioning_t *p, const nw_kube_snap_t *s);

/** How long until the batch window closes or pending pods are looked at again (ns from
 * mono; < 0: nothing scheduled). An open window whose close has passed gives 0 (due now). */
int64_t nw_provisioning_next_deadline(const nw_provisioning_t *p, int64_t mono);

/** Has the provisioner a batch waiting on s at mono: its window open, a nominated pod's
 * grace or its look again at pending pods come, or a pending pod in s it has not batched
 * yet (the next tick opens a window for it)? Other steps that run scheduling simulations
 * step aside for it (nw_ctl_deps_t.batch_waiting). */
bool nw_provisioning_waiting(nw_provisioning_t *p, const nw_kube_snap_t *s, int64_t mono);

/** Forget the batch window and the seen uids (a new leadership term; the shared memory is
 * cleared by its owner). */
void nw_provisioning_reset(nw_provisioning_t *p);

/** Wait until the status.nominatedNodeName writes in flight have finished (tests: their
 * answers are taken on the next tick). */
void nw_provisioning_nominations_wait(nw_provisioning_t *p);

/** Append nodewarden_scaler_solves_total and the nominatedNodeName write counters. */
/** The provisioner's writer of pods' status.nominatedNodeName (owned by p; NULL if p is), for
 * the lifecycle controller's nw_nominate_may_register. */
nw_nominate_t *nw_provisioning_nominator(nw_provisioning_t *p);

/** The provisioner's cohorts of NodeClaims registered together (owned by p; NULL if p is),
 * for the lifecycle controller's nw_cohort_ready. */
nw_cohorts_t *nw_provisioning_cohorts(nw_provisioning_t *p);

NW_MUST_USE nw_rc_t nw_provisioning_metrics(nw_provisioning_t *p, nw_buf_t *out);

#endif
