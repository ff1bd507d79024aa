/*
 * scaler/ctl/ctl.h — what every controller includes (and nothing above it):
 * the dependencies the controllers share (nw_ctl_deps_t: the Kubernetes client, the
 * cache, the event recorder, the cloud, the clock, leadership, the fault hook), the
 * memory provisioning, NodeClaim creation and disruption share (nw_ctl_shared_t: the
 * in-flight claims, the nominations and the simulation settings), and the small helpers
 * the controllers share: the leader-only write check, events, NodeClaim conditions, the
 * disrupted taint, counter tables for metrics. Implemented in scaler/ctl/ctl.c.
 *
 * Each controller has its own struct (its state and counters), made with
 * nw_<ctl>_new(deps, ...) from what it needs and freed with nw_<ctl>_free; none reaches
 * into another's.
 *
 * Ownership: loop.c owns the deps and the shared memory (created at start, freed at stop)
 * and every controller; controllers borrow them. Snapshots passed to ticks are borrowed.
 * Thread: the reconcile thread only (the recorder is not shared), except `leading` and
 * `stopping`, atomics any thread may read, and the cloud's launch and list, which the
 * launch workers of scaler/nodeclaim/nodeclaim.h call too (scaler/cloud/cloud.h).
 */
#ifndef NW_SCALER_CTL_CTL_H
#define NW_SCALER_CTL_CTL_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/wellknown.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/json.h"
#include "common/series.h"
#include "scaler/cloud/cloud.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/write.h"
#include "scaler/state/inflight.h"
#include "scaler/state/nominations.h"
#include "scaler/state/simsnap.h"

/* A test-only fault hook (config testing.*; NULL in production): called at named
 * points, e.g. "nodeclaim-created" right after a NodeClaim is created and before its
 * launch. */
typedef void (*nw_ctl_fault_fn)(void *ud, const char *point, const char *object);

/* What every controller is built on (all borrowed; loop.c owns them). */
typedef struct {
    nw_kube_client_t *kube;
    nw_kube_cache_t *cache;
    nw_kube_recorder_t *rec;
    nw_cloud_t *cloud;
    const nw_clock_t *clock;
    atomic_int leading;    /* this replica holds the Lease */
    atomic_int stopping;   /* the scaler is shutting down */
    nw_ctl_fault_fn fault; /* NULL: no fault points */
    void *fault_ud;
    nw_series_t *series; /* Karpenter's metric families (scaler/metrics/kmetrics.h); NULL: none */
    /* the cluster CA bundle the EC2NodeClass drift hash includes, as Karpenter's does
     * (settings.clusterCABundle, else base64 of the API server CA nodewarden trusts;
     * api/drifthash.h); NULL: none */
    const char *ca_bundle;
} nw_ctl_deps_t;

/* The memory provisioning, NodeClaim create/launch and disruption share, and the settings
 * of the cluster-input builder they all run (loop.c owns it; the reconcile thread only). */
typedef struct {
    nw_inflight_t inflight;   /* NodeClaims this process created or launched (state/inflight.h) */
    nw_nominations_t *noms;   /* nominations and FailedScheduling memory (state/nominations.h) */
    double vm_overhead;       /* settings.vmMemoryOverheadPercent */
    int reserved_enis;        /* settings.reservedENIs */
    int64_t default_max_pods; /* settings.podDensity: 0 = ENI-limited, else pods per node */
    int64_t batch_max_ns;     /* settings.batchMaxDuration (the nomination window) */
    bool min_values_best_effort; /* settings.minValuesPolicy=BestEffort */
    bool ignore_preferences;     /* settings.preferencePolicy=Ignore */
    /* the accelerator isolation policy (borrowed, outlives the scaler; NULL: none): the
     * cluster input's pools are isolated by it, and disruption is GPU-aware by it */
    const struct nw_gpu_policy *gpu;
} nw_ctl_shared_t;

/** Initialise shared memory (noms allocated); NW_ENOMEM on OOM. */
NW_MUST_USE nw_rc_t nw_ctl_shared_init(nw_ctl_shared_t *m);
/** Forget everything remembered (a new leadership term); settings are kept. */
void nw_ctl_shared_clear(nw_ctl_shared_t *m);
/** Free what nw_ctl_shared_init allocated. NULL-safe. */
void nw_ctl_shared_cleanup(nw_ctl_shared_t *m);

/** The builder's inputs (catalog, ICE cache, now, overhead, memory). */
void nw_ctl_sim_env(nw_ctl_deps_t *c, nw_ctl_shared_t *m, nw_simsnap_env_t *env);

/** Before a build: when the cloud's catalog has no offerings, resolve the EC2NodeClasses in
 * s and offer the zones of their subnets (cloud->ops->offer_zones). Logged, never fatal. */
void nw_ctl_prepare_catalog(nw_ctl_deps_t *c, const nw_kube_snap_t *s);

/** The nomination window: max(2 x batchMaxDuration, 10 s) (20 s at the defaults). */
int64_t nw_ctl_nomination_window(const nw_ctl_shared_t *m);

/** Call the fault hook, if any, at point (about object). */
void nw_ctl_fault(nw_ctl_deps_t *c, const char *point, const char *object);

/* ---- crash points (the key scaler.testing.crashAt; docs/robustness.md) ----
 * The crash campaign (tests/cluster/crash) kills nodewarden at named points of its work.
 * scaler.testing.crashAt="<point>[:<n>][+<ms>]" arms one point: its n-th hit (default 1)
 * raises SIGKILL (nothing flushed, no cleanup, the Lease kept), at once or, with +ms, from a
 * thread that sleeps ms first (to die while a call made right after the point is in
 * flight, e.g. a CreateFleet the simulator holds). Empty (the default), nothing is armed
 * and each point costs one NULL test (nw_ctl_fault). The points, in the order a
 * NodeClaim meets them: */
extern const char *const nw_ctl_crash_points[]; /* NULL-terminated */

typedef struct {
    char point[48];
    long nth;      /* die on this hit, 1-based */
    long delay_ms; /* 0: at once */
    atomic_long hits;
} nw_ctl_crash_t;

/** Parse scaler.testing.crashAt's value into out. NW_EINVAL naming the key for an unknown
 * point, a count below 1, a bad delay or trailing text. */
NW_MUST_USE nw_rc_t nw_ctl_crash_parse(const char *spec, nw_ctl_crash_t *out, nw_err_t *err);
/** Count a hit of point; true exactly on the armed point's n-th hit. Any thread. */
bool nw_ctl_crash_due(nw_ctl_crash_t *cr, const char *point);
/** The fault hook (nw_ctl_fault_fn) of an armed crash point, ud the nw_ctl_crash_t: logs
 * "crash point reached" and raises SIGKILL when the point is due. Any thread. */
void nw_ctl_crash_fault(void *ud, const char *point, const char *object);

/* ---- metrics: every controller's counters in one shape ---- */

/* One counter of a controller: its Prometheus name, help, and the atomic it reads. */
typedef struct {
    const char *name, *help;
    _Atomic uint64_t *v;
} nw_ctl_counter_t;

/** Append each counter (HELP, TYPE, value) in order; stops at the first error. */
NW_MUST_USE nw_rc_t nw_ctl_counters_write(nw_buf_t *out, const nw_ctl_counter_t *v, size_t n);

/** Is a leader-only write still allowed (leading and not stopping). */
bool nw_ctl_may_write(nw_ctl_deps_t *c);

/* ---- small JSON helpers shared by the steps ---- */

/** Set (or replace) a condition in obj.status.conditions; lastTransitionTime kept
 * when the status does not change. NW_ENOMEM when cJSON cannot allocate (obj may then
 * hold a partial condition: the caller drops the write). */
NW_MUST_USE nw_rc_t nw_ctl_set_condition(cJSON *obj, const char *type, const char *status,
                                         const char *reason, const char *message, int64_t now_ns);

/** Post an Event about obj (res names its kind) when this replica may write. */
void nw_ctl_event(nw_ctl_deps_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                  const char *reason, const char *msg);

/** Post an Event about a cached object (its key's namespace and name, its uid and
 * resourceVersion: no JSON needed, as for Nodes and NodeClaims) when this replica may
 * write. */
void nw_ctl_obj_event(nw_ctl_deps_t *c, const nw_kube_res_t *res, const nw_kube_obj_t *o,
                      const char *type, const char *reason, const char *msg);

/** The same through a recorder, without the leader check (the caller made it). */
void nw_ctl_obj_event_rec(nw_kube_recorder_t *rec, const nw_kube_res_t *res, const nw_kube_obj_t *o,
                          const char *type, const char *reason, const char *msg);

/** Post an Event about a pod (its record) when this replica may write. */
void nw_ctl_pod_event(nw_ctl_deps_t *c, const nw_pod_t *pod, const char *type, const char *reason,
                      const char *msg);

/** The karpenter.sh/disrupted:NoSchedule taint on a Node object (the one copy the
 * disruption, termination and interruption controllers share). add: leave exactly one
 * such taint (empty value), dropping others with the key (another effect or value, a
 * duplicate); remove: drop every taint with the key (and an empty taints list).
 * Returns 1 when node changed, 0 when it already was so, -1 on OOM (node unchanged or
 * partly changed: do not write it). */
int nw_ctl_disrupted_taint(cJSON *node, int add);

/** A read-modify-write of a cached NodeClaim's status (the status subresource) that starts
 * from its record instead of reading it: mutate runs on {"metadata":{"name","generation",
 * "resourceVersion"},"status":{"conditions","nodeName","lastPodEventTime"}} built from the
 * record (the members the record has); 1 from it: nothing to write (NW_OK); 0: a merge patch
 * of those status members, held to the record's resourceVersion (when it has one); -1 or a
 * conflict (the NodeClaim changed since): the GET, mutate and PUT of
 * nw_kube_write_update_retry instead. */
NW_MUST_USE nw_rc_t nw_ctl_claim_status_update(nw_ctl_deps_t *c, const nw_node_claim_t *rec,
                                               nw_kube_mutate_fn mutate, void *ud, nw_err_t *err);

/** Does the Node carry karpenter.sh/disrupted:NoSchedule (Karpenter's IsDisruptingTaint)? */
bool nw_ctl_has_disrupted_taint(const nw_node_t *node);

/** Is the Node's Ready condition True? (no condition: not ready) */
bool nw_ctl_node_ready(const cJSON *node);

/** Has every NodeClaim not being deleted its providerID (no launch still unrecorded)?
 * Karpenter's cluster state is not synced until then: no disruption decision, and
 * karpenter_cluster_state_synced 0. */
bool nw_ctl_claims_launched(const nw_kube_snap_t *s);

#endif
