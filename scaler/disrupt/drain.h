/*
 * scaler/disrupt/drain.h — the pure decisions of a node drain
 * (kubernetes-sigs/karpenter pkg/utils/pod predicates and the node termination
 * controller, pkg/controllers/node/termination/terminator/terminator.go): how each pod on a
 * draining node is classified, which pods the drain waits for, which it evicts (in four waves),
 * which it force-deletes because the NodeClaim's terminationGracePeriod deadline is near, the grace
 * period such a delete gets, the per-pod eviction backoff, and the TGP deadline annotation.
 *
 * No I/O, no clock: every function takes the time it needs ("now", epoch ns).
 * Thread: any (no state). Objects passed in are borrowed.
 */
#ifndef NW_SCALER_DISRUPT_DRAIN_H
#define NW_SCALER_DISRUPT_DRAIN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/node.h"
#include "api/pod.h"
#include "api/wellknown.h"
#include "common/err.h"

#define NW_ANN_TERMINATION_TS "karpenter.sh/nodeclaim-termination-timestamp"
#define NW_ANN_DO_NOT_DISRUPT "karpenter.sh/do-not-disrupt"
#define NW_LABEL_EXCLUDE_LB "node.kubernetes.io/exclude-from-external-load-balancers"

/* A pod terminating for longer than this past its deletionTimestamp is "stuck":
 * the drain stops waiting for it (Karpenter's IsStuckTerminating). */
#define NW_DRAIN_STUCK_NS (60 * INT64_C(1000000000))
/* Per-pod eviction backoff: 100 ms doubling to 10 s. */
#define NW_DRAIN_BACKOFF_MIN_NS (100 * INT64_C(1000000))
#define NW_DRAIN_BACKOFF_MAX_NS (10 * INT64_C(1000000000))
/* After the first drain attempt the node stays Drained=Unknown at least this long. */
#define NW_DRAIN_SETTLE_NS (5 * INT64_C(1000000000))

/* Eviction waves, in order; the drain moves to the next only when the previous is empty. */
typedef enum {
    NW_WAVE_NONCRITICAL = 0,    /* non-critical, not DaemonSet-owned */
    NW_WAVE_NONCRITICAL_DS = 1, /* non-critical DaemonSet pods */
    NW_WAVE_CRITICAL = 2,       /* system-cluster-critical / system-node-critical */
    NW_WAVE_CRITICAL_DS = 3,    /* critical DaemonSet pods */
    NW_WAVES
} nw_drain_wave_t;

/* What the drain knows about one pod (filled by nw_drain_classify). */
typedef struct {
    int terminal;            /* phase Succeeded or Failed */
    int terminating;         /* metadata.deletionTimestamp set */
    int stuck;               /* terminating for more than NW_DRAIN_STUCK_NS past it */
    int mirror;              /* owned by a Node (static pod) */
    int daemonset;           /* owned by an apps/v1 DaemonSet */
    int critical;            /* priorityClassName system-cluster-critical / system-node-critical */
    int tolerates_disrupted; /* tolerates karpenter.sh/disrupted:NoSchedule */
    int do_not_disrupt;      /* an active karpenter.sh/do-not-disrupt annotation */
    int dnd_invalid;         /* the annotation is there but is neither "true" nor a duration > 0 */
    int has_grace;           /* spec.terminationGracePeriodSeconds is set */
    int64_t grace_s;         /* its value */
    int64_t deletion_ns;     /* deletionTimestamp, 0 if none */
} nw_drain_pod_t;

/** Classify a pod object at time now_ns (epoch ns). Never fails: absent or
 * malformed fields count as absent. */
void nw_drain_classify(const nw_pod_t *pod, int64_t now_ns, nw_drain_pod_t *out);

/** Is the karpenter.sh/do-not-disrupt annotation active on this pod at now_ns:
 * "true", or a Go duration > 0 that has not yet elapsed since status.startTime (no
 * startTime: active). *invalid (nullable) is set for any other value (not active). */
bool nw_drain_do_not_disrupt(const nw_pod_t *pod, int64_t now_ns, int *invalid);

/** Does the drain wait for this pod: not terminal, not tolerating the disrupted
 * taint, not stuck terminating, not a mirror pod (Karpenter's IsWaitingEviction).
 * Pods with an active do-not-disrupt ARE waited for. */
bool nw_drain_waits_for(const nw_drain_pod_t *p);

/** May the drain call the Eviction API for it: active (not terminal, not
 * terminating), not tolerating the disrupted taint, not a mirror pod, no active
 * do-not-disrupt (Karpenter's IsEvictable). */
bool nw_drain_evictable(const nw_drain_pod_t *p);

/** The pod's eviction wave. */
nw_drain_wave_t nw_drain_wave(const nw_drain_pod_t *p);

/** Must the pod be deleted now, bypassing PDBs and do-not-disrupt, because of the
 * TGP deadline (deadline_ns 0 = none): it is waited for and either not yet
 * terminating with now > deadline - terminationGracePeriodSeconds, or terminating
 * with a deletionTimestamp after the deadline. */
bool nw_drain_must_delete(const nw_drain_pod_t *p, int64_t deadline_ns, int64_t now_ns);

/** Grace period (seconds) of such a delete: max(1, whole seconds until the deadline). */
int64_t nw_drain_delete_grace(int64_t deadline_ns, int64_t now_ns);

/** Backoff after the n-th consecutive failed eviction of a pod (n >= 1):
 * 100 ms * 2^(n-1), at most 10 s. n <= 0 gives 0. */
int64_t nw_drain_backoff(int failures);

/* What the drain does with one pod this pass. */
typedef enum {
    NW_DRAIN_SKIP = 0, /* not waited for (terminal, mirror, tolerating, stuck) */
    NW_DRAIN_WAIT,     /* waited for; nothing to do now (later wave, terminating, DND) */
    NW_DRAIN_EVICT,    /* call the Eviction API */
    NW_DRAIN_DELETE,   /* delete with nw_drain_delete_grace (TGP deadline) */
} nw_drain_action_t;

typedef struct {
    size_t waiting;     /* pods the drain still waits for (0: drained) */
    int wave;           /* the wave being evicted, -1 when none */
    size_t evict, del;  /* pods to evict / to delete this pass */
    size_t blocked_dnd; /* waited-for pods protected by do-not-disrupt */
} nw_drain_plan_t;

/** Decide one drain pass over n classified pods: actions[i] for pods[i] (caller
 * storage of n entries) and the summary. deadline_ns 0 = no TGP. */
void nw_drain_plan(const nw_drain_pod_t *pods, size_t n, int64_t deadline_ns, int64_t now_ns,
                   nw_drain_action_t *actions, nw_drain_plan_t *out);

/** The TGP deadline of a NodeClaim: its karpenter.sh/nodeclaim-termination-timestamp
 * annotation. NW_ENOTFOUND when absent; NW_EPARSE (err names the annotation) when it
 * is not RFC 3339. */
NW_MUST_USE nw_rc_t nw_drain_tgp_deadline(const nw_node_claim_t *nodeclaim, int64_t *deadline_ns,
                                          nw_err_t *err);

/** The annotation value a deleted NodeClaim gets: deletionTimestamp +
 * spec.terminationGracePeriod, RFC 3339 (buf >= 32 bytes). NW_ENOTFOUND when the
 * NodeClaim has no deletionTimestamp or no terminationGracePeriod; NW_EPARSE (err
 * names the field) when one does not parse. */
NW_MUST_USE nw_rc_t nw_drain_tgp_value(const nw_node_claim_t *nodeclaim, char *buf, size_t len,
                                       nw_err_t *err);

#endif
