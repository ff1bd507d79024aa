/*
 * scaler/state/nominations.h — the provisioner's memory of its decisions about pods:
 *
 *   nominations       pod uid -> the NodeClaim a batch placed it on. The cluster-input
 *                     builder adds a nominated pending pod as bound to its in-flight
 *                     NodeClaim, so the capacity it will use is not offered twice;
 *                     disruption leaves a nominated node alone.
 *   written           pod uid -> the Node the provisioner wrote to the pod's
 *                     status.nominatedNodeName (nw_nominations_wrote): which nominations
 *                     on pods are its own, to update or clear, and which the
 *                     kube-scheduler made (never touched).
 *   FailedScheduling  the last message reported per pod, so an Event is emitted once per
 *                     distinct message.
 *
 * Ownership: nw_nominations_t owns its strings (nw_nominations_free). Lookups never change
 * what is remembered (nw_nominations_missed keeps when it first saw a claim ready), but
 * they take a non-const memory: a batch's nominations are appended and sorted in by the
 * next lookup, and the first question about targets after a change indexes them by
 * NodeClaim (a batch of 10,000 pods costs O(n log n), not O(n^2), and disruption's
 * question per node a binary search). Pruning is an explicit call by the provisioner
 * after it has used a build.
 * Thread: the reconcile thread only.
 */
#ifndef NW_SCALER_STATE_NOMINATIONS_H
#define NW_SCALER_STATE_NOMINATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nw_nominations nw_nominations_t;

/** Empty memory; NULL on OOM. */
nw_nominations_t *nw_nominations_new(void);
void nw_nominations_free(nw_nominations_t *n);
/** Forget everything (a new leadership term). */
void nw_nominations_clear(nw_nominations_t *n);

/** Record that pod uid is expected to run on NodeClaim claim (at monotonic mono). */
void nw_nominations_nominate(nw_nominations_t *n, const char *pod_uid, const char *claim,
                             int64_t mono);

/** The NodeClaim pod uid is nominated to, or NULL. Borrowed until the next change. */
const char *nw_nominations_claim_of(nw_nominations_t *n, const char *pod_uid);

/** Record that pod uid's status.nominatedNodeName now names node (NULL: cleared) by the
 * provisioner's own write. Kept with the pod's nomination (dropped when it is pruned); a
 * pod with no nomination is not recorded. */
void nw_nominations_wrote(nw_nominations_t *n, const char *pod_uid, const char *node);

/** The node the provisioner last wrote to pod uid's status.nominatedNodeName, or NULL.
 * Borrowed until the next change. */
const char *nw_nominations_written(nw_nominations_t *n, const char *pod_uid);

/** Did pending pod uid miss its NodeClaim? claim_ready: that claim is initialized now (its
 * node takes pods). True once both the nomination and the claim's readiness (first seen by
 * this call) are grace_ns old and the kube-scheduler has tried the pod since the grace
 * began (tried: its nw_pod_scheduled_mark, differs from the one seen then; it rewrites
 * the pod's PodScheduled condition when an attempt fails) and it is still pending, so it
 * went elsewhere's share or lost its room to other pods, and its placement is due again. A
 * pod the scheduler has not tried since is not placed again: at 10,000 pods waiting for a
 * scheduler that binds a few hundred a second (or none, as in a benchmark), each
 * placement would be a whole solve for nothing. Otherwise *due_ns is lowered to the ns
 * until it would be true (when the claim is ready and the pod was tried). A new
 * nomination (nw_nominations_nominate) starts the grace again; each true answer for the
 * same claim doubles it (up to 32 times): placed there again, the pod waits for a slow
 * scheduler rather than for room. */
bool nw_nominations_missed(nw_nominations_t *n, const char *pod_uid, uint64_t tried_mark,
                           bool claim_ready, int64_t mono, int64_t grace_ns, int64_t *due_ns);

/** Is any pod nominated (false: every nw_nominations_targets answer is false)? */
bool nw_nominations_any(const nw_nominations_t *n);
/** Is claim the target of a nomination: any when in_flight, else one made within
 * window_ns before mono? */
bool nw_nominations_targets(nw_nominations_t *n, const char *claim, bool in_flight, int64_t mono,
                            int64_t window_ns);

/** Drop the nominations of pods not in keep (uids, any order) that are older than 30 s. */
void nw_nominations_prune(nw_nominations_t *n, const char *const *keep, size_t nkeep, int64_t mono);

/** True when msg is new for pod uid (and remember it); false when it was the last one
 * reported. */
bool nw_nominations_event_once(nw_nominations_t *n, const char *uid, const char *msg);

/** Forget the messages of pods not passed to nw_nominations_event_once since the last prune. */
void nw_nominations_event_prune(nw_nominations_t *n);

#endif
