/*
 * scaler/controllers/upkeep.h — the controllers that keep NodeClaims and NodePools current,
 * run from the reconcile thread after the provisioner and the lifecycle:
 *
 *   hash annotations   karpenter.sh/nodepool-hash(-version) on NodePools and
 *                      karpenter.k8s.aws/ec2nodeclass-hash(-version) on EC2NodeClasses
 *                      (scaler/disrupt/hash.h), and the hash version on older
 *                      NodeClaims (scaler/controllers/driftmark.c)
 *   drift marking      the Drifted condition on launched NodeClaims
 *                      (scaler/disrupt/drift.h, driftmark.h)
 *   expiration         NodeClaims past spec.expireAfter are deleted (scaler/controllers/expiry.h)
 *   NodePool status    status.resources, status.nodes, conditions ValidationSucceeded,
 *                      NodeClassReady, NodeRegistrationHealthy, Ready
 *                      (scaler/controllers/poolstatus.h)
 *
 * Ownership: nw_ctl_t.upkeep, created by nw_upkeep_new in nw_scaler_start and freed
 * by nw_upkeep_free; the sub-controllers' state lives inside it.
 * Thread: the reconcile thread, except nw_upkeep_metrics (any thread; the counters
 * have their own mutex).
 */
#ifndef NW_SCALER_CONTROLLERS_UPKEEP_H
#define NW_SCALER_CONTROLLERS_UPKEEP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "scaler/controllers/ctl.h"

struct nw_driftmark;
struct nw_poolstatus;

typedef struct {
    char metric[48];
    char nodepool[128];
    char reason[48];
    uint64_t v;
} nw_upkeep_counter_t;

struct nw_upkeep {
    struct nw_driftmark *drift;  /* owned (driftmark.h) */
    struct nw_poolstatus *pools; /* owned (poolstatus.h) */
    char expired[32][64];        /* uids recently deleted by expiry (ring) */
    unsigned nexpired;
    pthread_mutex_t mu;          /* guards the counters */
    nw_upkeep_counter_t *counters;
    size_t ncounters, cap;
};
typedef struct nw_upkeep nw_upkeep_t;

/** New state; NULL on OOM. */
nw_upkeep_t *nw_upkeep_new(void);

/** Free. NULL-safe. */
void nw_upkeep_free(nw_upkeep_t *u);

/** A new leadership term: forget per-object memory (counters are kept). */
void nw_upkeep_reset(nw_upkeep_t *u);

/** One pass of every upkeep controller on a snapshot (writes only while leading). */
void nw_upkeep_tick(nw_ctl_t *c, const nw_kube_snap_t *s);

/** Count one event: metric is "drifted" or "expired"; reason may be "". */
void nw_upkeep_count(nw_upkeep_t *u, const char *metric, const char *nodepool, const char *reason);

/** Current value of a counter (0 if never counted); for tests. */
uint64_t nw_upkeep_counter(nw_upkeep_t *u, const char *metric, const char *nodepool,
                           const char *reason);

/** Append nodewarden_nodeclaims_drifted_total{nodepool,reason} and
 * nodewarden_nodeclaims_expired_total{nodepool} (Prometheus text). */
nw_rc_t nw_upkeep_metrics(nw_upkeep_t *u, nw_buf_t *out);

/** Stamp a NodeClaim object about to be created with the drift hashes of its NodePool
 * (label karpenter.sh/nodepool) and EC2NodeClass (spec.nodeClassRef.name), looked up
 * in s (nw_hash_stamp_nodeclaim). A pool or class missing from s is left out. */
void nw_upkeep_stamp_nodeclaim(cJSON *nodeclaim, const nw_kube_snap_t *s);

/** Post an Event about obj when this replica may write (leader). */
void nw_upkeep_event(nw_ctl_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                     const char *reason, const char *msg);

#endif
