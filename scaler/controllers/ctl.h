/*
 * scaler/controllers/ctl.h — the scaler controller's shared context, used by the reconcile
 * thread (scaler/loop.c) and the steps it runs each tick: the provisioner
 * (scaler/controllers/provisioning.c) and the lifecycle (scaler/controllers/lifecycle.c).
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

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/cloud.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/write.h"

#define NW_FINALIZER "karpenter.sh/termination"
#define NW_LABEL_NODEPOOL "karpenter.sh/nodepool"
#define NW_LABEL_NODECLASS "karpenter.k8s.aws/ec2nodeclass"
#define NW_TAINT_UNREGISTERED "karpenter.sh/unregistered"

struct nw_dis_ctl; /* scaler/controllers/disruption.h */

/* A NodeClaim this process created or launched; kept until the cache shows it. */
typedef struct nw_ctl_claim {
    char name[256];
    cJSON *obj;           /* the created object (owned), used while the cache lags */
    int64_t created_mono; /* ns */
    int launched;         /* we launched it (provider_id valid) */
    char provider_id[192];
    cJSON *status;        /* the status we wrote (owned) or NULL */
    int64_t next_try_mono; /* after a failed launch */
    int seen_in_cache;     /* the cache has shown it at least once */
    int deleted;           /* we deleted it (ICE): no longer capacity */
    struct nw_ctl_claim *next;
} nw_ctl_claim_t;

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
    /* provisioner memory */
    nw_ctl_claim_t *claims;
    /* nominations and FailedScheduling memory (scaler/state/simsnap.c; owned) */
    struct nw_simsnap_state *sim;
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
    /* counters (metrics) */
    _Atomic uint64_t n_created, n_launched, n_launch_failed, n_registered, n_initialized,
        n_reg_timeouts, n_solves;
} nw_ctl_t;

/** One provisioner pass on a snapshot: batch window bookkeeping; when the window
 * closes, place the pending pods and create and launch NodeClaims; also launch
 * every NodeClaim that exists without a providerID (once: instances tagged
 * karpenter.sh/nodeclaim=<name> are looked up first). */
void nw_prov_tick(nw_ctl_t *c, const nw_kube_snap_t *s);

/** One lifecycle pass: registration, initialization, registration timeout,
 * EC2NodeClass status. (The finalizers: scaler/controllers/termination.h.) */
void nw_life_tick(nw_ctl_t *c, const nw_kube_snap_t *s);

/** One disruption pass (scaler/controllers/disruption.c): markers, commands in flight,
 * and, when due, a decision. */
void nw_dis_tick(nw_ctl_t *c, const nw_kube_snap_t *s);

/** Free the provisioner memory (claims, seen uids). */
void nw_prov_cleanup(nw_ctl_t *c);

/** Is a leader-only write still allowed (leading and not stopping). */
int nw_ctl_may_write(nw_ctl_t *c);

/* ---- small JSON helpers shared by the steps ---- */

/** A NodeClaim's condition `type` status ("True", ...) or NULL. */
const char *nw_ctl_condition(const cJSON *obj, const char *type);

/** Set (or replace) a condition in obj.status.conditions; lastTransitionTime kept
 * when the status does not change. */
void nw_ctl_set_condition(cJSON *obj, const char *type, const char *status, const char *reason,
                          const char *message, int64_t now_ns);

/** String at a dotted path of nested objects ("spec.nodeClassRef.name") or NULL. */
const char *nw_ctl_str(const cJSON *obj, const char *path);

/** Append one Prometheus counter (HELP, TYPE, value) for the scaler's /metrics. */
nw_rc_t nw_ctl_counter(nw_buf_t *out, const char *name, const char *help, uint64_t v);

/** The NodeClaim recorded in memory by name, or NULL. */
nw_ctl_claim_t *nw_ctl_claim_find(nw_ctl_t *c, const char *name);

/** Find or add the memory record of a NodeClaim this process created (NULL on OOM). */
nw_ctl_claim_t *nw_ctl_claim_remember(nw_ctl_t *c, const char *name);

/** Launch a NodeClaim that has no providerID (once: fresh = created by this process just
 * now, else instances tagged karpenter.sh/nodeclaim=<name> are looked up first), record
 * the launch in its status; on insufficient capacity delete it. nc is borrowed. */
void nw_prov_launch_claim(nw_ctl_t *c, const nw_kube_snap_t *s, const cJSON *nc, int fresh);

#endif
