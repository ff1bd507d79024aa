/*
 * scaler/controllers/interruption.h — the interruption controller
 * (aws/karpenter-provider-aws pkg/controllers/interruption/controller.go): its own thread
 * reads an interruption source (scaler/cloud/interrupt.h; on AWS the SQS queue named by
 * settings.interruptionQueue, fed by EventBridge rules: scaler/aws/intrsource.h), so a 20 s
 * long poll never blocks the reconcile thread, and acts on each event while this replica
 * holds the Lease:
 *
 *   spot interruption warning  → (spot, type, zone) ICE-unavailable for the
 *                                cache TTL, Node tainted karpenter.sh/disrupted:
 *                                NoSchedule at once, NodeClaim deleted
 *   scheduled change (EC2)     → NodeClaim deleted
 *   stopping/stopped, shutting-down/terminated → NodeClaim deleted
 *   capacity-reservation interruption → NodeClaim deleted
 *   rebalance recommendation   → an Event only
 *   unknown kinds              → nothing
 *
 * Deleting the NodeClaim is the whole action: the termination flow drains the
 * node and terminates the instance, and the provisioner launches capacity for
 * the evicted pods. NodeClaims are found by the instance id in
 * status.providerID (its last segment, nw_cloud_instance_id), Nodes by spec.providerID.
 *
 * Messages: parse failures are logged and acknowledged (deleted from the queue); handled
 * messages are acknowledged; a message whose handling failed (a Kubernetes write error) is
 * not, and comes back (on SQS after the visibility timeout, 20 s).
 *
 * Ownership: nw_interruption_new returns an owned handle; nw_interruption_free stops the thread (a
 * long poll in flight is abandoned within about a second) and frees it. deps and everything in the
 * options are borrowed and must outlive the handle (the source too: its owner frees it after
 * nw_interruption_free). Thread: new/start/free from one controlling thread; nw_interruption_poll
 * on the controller's thread (or, without one, the caller's); nw_interruption_metrics from any.
 */
#ifndef NW_SCALER_CONTROLLERS_INTERRUPTION_H
#define NW_SCALER_CONTROLLERS_INTERRUPTION_H

#include <stdatomic.h>
#include <stddef.h>

#include "api/wellknown.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "scaler/cloud/ice.h"
#include "scaler/cloud/interrupt.h"
#include "scaler/ctl/ctl.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/write.h"

typedef struct {
    nw_ice_t *ice;                 /* may be NULL: no ICE marks (borrowed; it has its own mutex) */
    nw_interrupt_source_t *source; /* where the events come from */
} nw_interruption_opts_t;

typedef struct nw_interruption nw_interruption_t;

/** A new controller (no thread yet; no I/O) on deps: the Kubernetes client, the cache, the
 * recorder and the clock are used from its thread; it acts only while deps->leading is set
 * and deps->stopping is not. NW_EINVAL when a collaborator is missing. */
NW_MUST_USE nw_rc_t nw_interruption_new(nw_ctl_deps_t *deps, const nw_interruption_opts_t *o,
                                        nw_interruption_t **out, nw_err_t *err);

/** Start the thread: nw_interruption_poll in a loop while leading and synced, backing off 1 s .. 30
 * s after a failed receive. */
NW_MUST_USE nw_rc_t nw_interruption_start(nw_interruption_t *h, nw_err_t *err);

/** One round on the calling thread: receive from the source (its long poll), handle each
 * message while this replica may write, acknowledge those handled or unparseable. Returns
 * the number of messages received, -1 when the receive failed. The thread's body; tests
 * call it directly (not while the thread runs). */
int nw_interruption_poll(nw_interruption_t *h);

/** Stop the thread (if started) and free. NULL-safe. */
void nw_interruption_free(nw_interruption_t *h);

/** Append nodewarden_interruption_* series. */
NW_MUST_USE nw_rc_t nw_interruption_metrics(nw_interruption_t *h, nw_buf_t *out);

/* ---- the decision, pure over a snapshot (exposed for tests) ---- */

typedef struct {
    char instance_id[32];
    const nw_kube_obj_t *nodeclaim; /* borrowed from the snapshot; NULL when none matches */
    const nw_kube_obj_t *node;      /* NULL when none matches */
    int delete_claim;               /* the NodeClaim exists and is not being deleted yet */
    int cordon;                     /* taint the Node karpenter.sh/disrupted:NoSchedule */
    int mark_ice;                   /* mark (ice_ct, ice_type, ice_zone) unavailable */
    char ice_ct[32], ice_type[64], ice_zone[64];
    const char *reason;  /* Event reason on the NodeClaim and Node (static) */
    const char *type;    /* "Normal" / "Warning" */
    const char *message; /* Event message (static) */
} nw_interruption_action_t;

/** One action per instance id of ev (at most cap); returns how many. Instances
 * without a NodeClaim get an action with nodeclaim NULL and nothing to do. */
size_t nw_interruption_plan(const nw_kube_snap_t *s, const nw_interrupt_event_t *ev,
                            nw_interruption_action_t *out, size_t cap);

/** The NodeClaim whose status.providerID names instance id (aws:///<zone>/<id>), or NULL. */
const nw_kube_obj_t *nw_interruption_nodeclaim_for_instance(const nw_kube_snap_t *s,
                                                            const char *id);
/** The Node whose spec.providerID names instance id, or NULL. */
const nw_kube_obj_t *nw_interruption_node_for_instance(const nw_kube_snap_t *s, const char *id);

#endif
