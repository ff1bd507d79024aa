/*
 * scaler/controllers/ctl.h — what every controller includes (and nothing above it):
 * the scaler's shared context nw_ctl_t (the Kubernetes client, the cache, the event
 * recorder, the cloud, the clock, leadership) and the small helpers the controllers
 * share: the leader-only write check, events, NodeClaim conditions, dotted-path reads.
 * Implemented in scaler/controllers/ctl.c; no controller includes another's header
 * for these.
 *
 * Ownership: everything in nw_ctl_t is owned by loop.c (created at start, freed at
 * stop); the steps borrow it. Snapshots passed to the steps are borrowed.
 * Thread: the reconcile thread only (the cloud and the recorder are not shared),
 * except `leading`, an atomic any thread may read.
 */
#ifndef NW_SCALER_CONTROLLERS_CTL_H
#define NW_SCALER_CONTROLLERS_CTL_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdint.h>

#include "api/wellknown.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/json.h"
#include "scaler/cloud/cloud.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/write.h"
#include "scaler/state/inflight.h"
#include "scaler/state/nominations.h"
#include "scaler/state/simsnap.h"

struct nw_dis_ctl; /* scaler/controllers/disruption.h */

/* A test-only fault hook (config testing.*; NULL in production): called at named
 * points, e.g. "nodeclaim-created" right after a NodeClaim is created and before its
 * launch. */
typedef void (*nw_ctl_fault_fn)(void *ud, const char *point, const char *object);

struct nw_gc;

typedef struct {
    nw_kube_client_t *kube;
    nw_kube_cache_t *cache;
    nw_kube_recorder_t *rec;
    nw_cloud_t *cloud;
    const nw_clock_t *clock;
    atomic_int leading;
    atomic_int stopping;
    int64_t batch_idle_ns, batch_max_ns, registration_timeout_ns;
    double vm_overhead;
    int repack; /* scaler.repack: re-pack interchangeable NodeClaims (nw_sched_opts_t) */
    int reserved_enis;
    /* batching */
    int64_t window_open_mono, last_trigger_mono, next_resolve_mono;
    char **seen_uids; /* pending pod uids already counted as triggers (owned) */
    size_t nseen;
    /* NodeClaims this process created or launched (scaler/state/inflight.h) */
    nw_inflight_t inflight;
    /* nominations and FailedScheduling memory (scaler/state/nominations.h; owned) */
    nw_noms_t *noms;
    /* EC2NodeClass status refresh */
    int64_t next_nodeclass_mono;
    /* garbage collection (scaler/controllers/gc.h; owned by loop.c) */
    struct nw_gc *gc;
    /* graceful termination (scaler/controllers/termination.h; owned) */
    struct nw_term *term;
    /* drift marking, expiration, NodePool status (scaler/controllers/upkeep.h; owned) */
    struct nw_upkeep *upkeep;
    /* disruption controller (scaler/controllers/disruption.h), owned */
    struct nw_dis_ctl *disruption;
    nw_ctl_fault_fn fault; /* NULL: no fault points */
    void *fault_ud;
    /* counters (metrics) */
    _Atomic uint64_t n_created, n_launched, n_launch_failed, n_registered, n_initialized,
        n_reg_timeouts, n_solves;
} nw_ctl_t;

/** The builder's inputs from this context (catalog, ICE cache, now, overhead, memory). */
void nw_ctl_sim_env(nw_ctl_t *c, nw_simsnap_env_t *env);

/** Before a build: when the cloud's catalog has no offerings, resolve the EC2NodeClasses in
 * s and offer the zones of their subnets (cloud->ops->offer_zones). Logged, never fatal. */
void nw_ctl_prepare_catalog(nw_ctl_t *c, const nw_kube_snap_t *s);

/** The nomination window: max(2 x batchMaxDuration, 10 s) (20 s at the defaults). */
int64_t nw_ctl_nomination_window(const nw_ctl_t *c);

/** Call the fault hook, if any, at point (about object). */
void nw_ctl_fault(nw_ctl_t *c, const char *point, const char *object);

/** Is a leader-only write still allowed (leading and not stopping). */
int nw_ctl_may_write(nw_ctl_t *c);

/* ---- small JSON helpers shared by the steps ---- */

/** Set (or replace) a condition in obj.status.conditions; lastTransitionTime kept
 * when the status does not change. NW_ENOMEM when cJSON cannot allocate (obj may then
 * hold a partial condition: the caller drops the write). */
nw_rc_t nw_ctl_set_condition(cJSON *obj, const char *type, const char *status, const char *reason,
                             const char *message, int64_t now_ns);

/** Post an Event about obj (res names its kind) when this replica may write. */
void nw_ctl_event(nw_ctl_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                  const char *reason, const char *msg);

/** The karpenter.sh/disrupted:NoSchedule taint on a Node object (the one copy the
 * disruption, termination and interruption controllers share). add: leave exactly one
 * such taint (empty value), dropping others with the key (another effect or value, a
 * duplicate); remove: drop every taint with the key (and an empty taints list).
 * Returns 1 when node changed, 0 when it already was so, -1 on OOM (node unchanged or
 * partly changed: do not write it). */
int nw_ctl_disrupted_taint(cJSON *node, int add);

/** Does the Node carry karpenter.sh/disrupted:NoSchedule (Karpenter's IsDisruptingTaint)? */
int nw_ctl_has_disrupted_taint(const cJSON *node);

/** Is the Node's Ready condition True? (no condition: not ready) */
int nw_ctl_node_ready(const cJSON *node);

#endif
