/*
 * scaler/state/nominations.h — the provisioner's memory of its decisions about pods:
 *
 *   nominations       pod uid -> the NodeClaim a batch placed it on. The cluster-input
 *                     builder adds a nominated pending pod as bound to its in-flight
 *                     NodeClaim, so the capacity it will use is not offered twice;
 *                     disruption leaves a nominated node alone.
 *   FailedScheduling  the last message reported per pod, so an Event is emitted once per
 *                     distinct message.
 *
 * Ownership: nw_nominations_t owns its strings (nw_nominations_free). Lookups never change the
 * memory; pruning is an explicit call by the provisioner after it has used a build.
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
const char *nw_nominations_claim_of(const nw_nominations_t *n, const char *pod_uid);

/** Is claim the target of a nomination: any when in_flight, else one made within
 * window_ns before mono? */
bool nw_nominations_targets(const nw_nominations_t *n, const char *claim, bool in_flight,
                            int64_t mono, int64_t window_ns);

/** Drop the nominations of pods not in keep (uids, any order) that are older than 30 s. */
void nw_nominations_prune(nw_nominations_t *n, const char *const *keep, size_t nkeep, int64_t mono);

/** True when msg is new for pod uid (and remember it); false when it was the last one
 * reported. */
bool nw_nominations_event_once(nw_nominations_t *n, const char *uid, const char *msg);

/** Forget the messages of pods not passed to nw_nominations_event_once since the last prune. */
void nw_nominations_event_prune(nw_nominations_t *n);

#endif
