/*
 * scaler/controllers/termination.h — graceful node termination: the
 * karpenter.sh/termination finalizers on NodeClaims and Nodes
 * (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle/controller.go and
 * pkg/controllers/node/termination/controller.go).
 *
 * THE ENTRY POINT for every controller that wants a node gone (disruption,
 * expiration, interruption, garbage collection, the registration timeout, a
 * user's `kubectl delete nodeclaim X` or `kubectl delete node Y`):
 *
 *     DELETE the NodeClaim (nw_kube_write_delete(kube, &nw_kube_client_res_nodeclaims, NULL,
 *     name, NULL, NULL, &err)), nothing else.
 *
 * The finalizers below then drain the node through the Eviction API (PDBs and
 * do-not-disrupt honoured until the NodeClaim's terminationGracePeriod
 * deadline), terminate the instance and remove the objects. Deleting the Node
 * instead takes the same path (its finalizer deletes the NodeClaim first).
 * Nothing here blocks: each call to nw_termination_tick advances every termination by
 * what can be done now, and everything it needs after a restart is derived from
 * the objects (deletionTimestamps, the termination-timestamp annotation, the
 * taint, the NodeClaim's Drained / VolumesDetached / InstanceTerminating
 * conditions), so a killed and restarted nodewarden finishes a drain.
 *
 * NodeClaim being deleted, each tick:
 *   1. spec.terminationGracePeriod set → annotation
 *      karpenter.sh/nodeclaim-termination-timestamp = deletionTimestamp + TGP, once;
 *   2. a Node with its providerID → delete it (the Node finalizer drains it) and
 *      wait until it is gone;
 *   3. providerID → terminate the instance until EC2 reports it gone (checked
 *      every 5 s), condition InstanceTerminating=True; no providerID → any
 *      instance tagged karpenter.sh/nodeclaim=<name> (a launch before a crash)
 *      is terminated;
 *   4. remove the finalizer.
 * Node being deleted (with our finalizer), each tick:
 *   1. its NodeClaim is deleted if it is not being deleted yet;
 *   2. not Ready and the instance gone → remove the finalizer, done;
 *   3. taint karpenter.sh/disrupted:NoSchedule (replacing a same-key taint) and
 *      label node.kubernetes.io/exclude-from-external-load-balancers=karpenter;
 *   4. drain (drain.h): pods past the TGP deadline are deleted with grace
 *      max(1 s, deadline - now) (event Disrupted on the pod); the others are
 *      evicted wave by wave (policy/v1 Eviction with a UID precondition; 2xx,
 *      404, 409 count as done; 429 and the several-PDBs 500 → Warning
 *      FailedDraining on the Node; every failure backs off per pod 100 ms →
 *      10 s); do-not-disrupt pods are waited for, not evicted; NodeClaim
 *      Drained=Unknown (Draining) while pods remain, Drained=True once none has
 *      been left for 5 s after the first attempt;
 *   5. VolumeAttachments (storage.k8s.io/v1) on the node, except those of pods
 *      the drain does not wait for, are waited for (VolumesDetached=Unknown,
 *      Warning AwaitingVolumeDetachment) until the TGP deadline
 *      (VolumesDetached=False) — skipped when the API does not serve them;
 *   6. terminate the instance (InstanceTerminating=True) until EC2 reports it gone;
 *   7. remove the finalizer (the Node goes; the NodeClaim's finalizer completes).
 *
 * Ownership: nw_termination_new / nw_termination_free (loop.c).
 * Thread: the reconcile thread, except nw_termination_metrics (any thread; atomics).
 */
#ifndef NW_SCALER_CONTROLLERS_TERMINATION_H
#define NW_SCALER_CONTROLLERS_TERMINATION_H

#include "common/buf.h"
#include "scaler/ctl/ctl.h"

typedef struct nw_termination nw_termination_t;

/** New termination state (NULL on OOM); deps is borrowed and outlives it. */
nw_termination_t *nw_termination_new(nw_ctl_deps_t *deps);

/** Free. NULL-safe. */
void nw_termination_free(nw_termination_t *t);

/** Forget per-node memory (a new leadership term); counters are kept. */
void nw_termination_reset(nw_termination_t *t);

/** One pass over every NodeClaim and Node being deleted (leader only). NULL-safe. */
void nw_termination_tick(nw_termination_t *t, const nw_kube_snap_t *s);

/** Append the Prometheus series: nodewarden_termination_* (see docs/scaler.md, "Events and
 * metrics"). */
NW_MUST_USE nw_rc_t nw_termination_metrics(nw_termination_t *t, nw_buf_t *out);

#endif
