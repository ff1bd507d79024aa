/*
 * scaler/controllers/provisioning.h — the provisioner: the batch window over pending
 * pods (settings.batchIdleDuration / batchMaxDuration), the scheduling simulation on
 * the cluster input (scaler/state/simsnap.h), FailedScheduling events, nominations,
 * and NodeClaims created and launched through scaler/controllers/nodeclaim.h.
 *
 * State: the batching fields of nw_ctl_t (window_open_mono, last_trigger_mono,
 * next_resolve_mono, seen_uids) and the in-flight and nomination memory.
 * Thread: the reconcile thread.
 */
#ifndef NW_SCALER_CONTROLLERS_PROVISIONING_H
#define NW_SCALER_CONTROLLERS_PROVISIONING_H

#include <stdint.h>

#include "scaler/controllers/ctl.h"

/** One provisioner pass on a snapshot: batch window bookkeeping; when the window
 * closes, place the pending pods and create and launch NodeClaims; also launch
 * every NodeClaim that exists without a providerID (once: instances tagged
 * karpenter.sh/nodeclaim=<name> are looked up first). */
void nw_prov_tick(nw_ctl_t *c, const nw_kube_snap_t *s);

/** How long until the batch window closes or pending pods are looked at again (ns from
 * mono; < 0: nothing scheduled). */
int64_t nw_prov_next_deadline(const nw_ctl_t *c, int64_t mono);

/** Forget the provisioner memory (in-flight claims, seen uids, nominations). */
void nw_prov_cleanup(nw_ctl_t *c);

#endif
