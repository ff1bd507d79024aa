/*
 * scaler/controllers/disruption.h — the disruption controller run by the reconcile thread
 * (scaler/loop.c): the NodeClaim markers (status.lastPodEventTime, the Consolidatable
 * condition), one disruption pass every pollPeriod (immediately again after a command),
 * the validation delay, and command execution (kubernetes-sigs/karpenter
 * pkg/controllers/disruption/controller.go, queue.go): taint the candidates
 * karpenter.sh/disrupted:NoSchedule, set their DisruptionReason condition, create the replacement
 * NodeClaims (the provisioner launches them), wait until every replacement is Initialized
 * (commandTimeout), then delete the candidate NodeClaims — deletion is the whole removal step (the
 * NodeClaim finalizer drains and terminates). At the start of each pass, leftovers of an
 * interrupted command (the taint, the condition) are removed from nodes that no command holds.
 *
 * Decisions come from the pure core (disrupt.h) with the scheduling simulation of sim.h.
 * Every decision records an Event on the NodeClaims and Nodes and counts in
 * nodewarden_disruption_* metrics.
 *
 * Ownership: nw_disruption_ctl_new / nw_disruption_ctl_free (loop.c). It creates replacements
 * through the nw_nodeclaim_t it is given and reads the shared nominations (scaler/ctl/ctl.h
 * nw_ctl_shared_t). Thread: the reconcile thread, except nw_disruption_metrics (any thread).
 */
#ifndef NW_SCALER_CONTROLLERS_DISRUPTION_H
#define NW_SCALER_CONTROLLERS_DISRUPTION_H

#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "scaler/ctl/ctl.h"
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/write.h"

typedef struct nw_disruption nw_disruption_t;

typedef struct {
    int64_t poll_ns;            /* idle pass period (10 s) */
    int64_t validation_ns;      /* validation delay (15 s; 0: none) */
    int64_t command_timeout_ns; /* replacements must be Initialized within (10 min) */
    int spot_to_spot;           /* SpotToSpotConsolidation */
    /* under a stream of changes, full ticks (they read the whole cluster) at most every
     * view_duty times the last one's cost, measured on the system's clock (0: every
     * second; serve gives 10, so they take at most about a tenth of a core) */
    int view_duty;
} nw_disruption_opts_t;

/** New controller state (NULL on OOM). Zero options take the defaults. deps, claims and mem
 * are borrowed and outlive it. instance != NULL: the controller gets its own event recorder
 * on deps->kube, reporting as `instance` (provisioning bursts must not starve its events);
 * NULL: it uses deps->rec. */
nw_disruption_t *nw_disruption_ctl_new(nw_ctl_deps_t *deps, nw_nodeclaim_t *claims,
                                       nw_ctl_shared_t *mem, const nw_disruption_opts_t *o,
                                       const char *instance);
void nw_disruption_ctl_free(nw_disruption_t *d);

/** Forget the commands in flight (a new leadership term; the next pass cleans up). */
void nw_disruption_ctl_reset(nw_disruption_t *d);

/** One disruption pass: markers, commands in flight, and, when due, a decision. */
void nw_disruption_tick(nw_disruption_t *d, const nw_kube_snap_t *s);

/** Would a tick on s do anything (false: it would return at once)? Asked on an older
 * snapshot than the tick's, a false answer may miss the changes since; a change wakes the
 * reconcile loop, whose next pass asks again. */
bool nw_disruption_due(const nw_disruption_t *d, const nw_kube_snap_t *s);

/** Append the nodewarden_disruption_* series. */
NW_MUST_USE nw_rc_t nw_disruption_metrics(nw_disruption_t *d, nw_buf_t *out);

#endif
