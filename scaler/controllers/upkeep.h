/*
 * scaler/controllers/upkeep.h — the controllers that keep NodeClaims and NodePools current,
 * run from the reconcile thread after the provisioner and the lifecycle:
 *
 *   hash annotations   karpenter.sh/nodepool-hash(-version) on NodePools and
 *                      karpenter.k8s.aws/ec2nodeclass-hash(-version) on EC2NodeClasses
 *                      (api/drifthash.h), and the hash version on older
 *                      NodeClaims (scaler/controllers/driftmark.c)
 *   drift marking      the Drifted condition on launched NodeClaims
 *                      (scaler/disrupt/drift.h, driftmark.h)
 *   expiration         NodeClaims past spec.expireAfter are deleted (scaler/controllers/expiry.h)
 *   NodePool status    status.resources, status.nodes, conditions ValidationSucceeded,
 *                      NodeClassReady, NodeRegistrationHealthy, Ready
 *                      (scaler/controllers/poolstatus.h)
 *
 * upkeep is only the runner: each controller has its own header and state, and none
 * of them includes this one.
 *
 * Ownership: loop.c creates it with nw_upkeep_new in nw_scaler_loop_start and frees it with
 * nw_upkeep_free; the sub-controllers' state lives inside it.
 * Thread: the reconcile thread, except nw_upkeep_metrics (any thread; the counter
 * registry has its own mutex).
 */
#ifndef NW_SCALER_CONTROLLERS_UPKEEP_H
#define NW_SCALER_CONTROLLERS_UPKEEP_H

#include "common/buf.h"
#include "common/err.h"
#include "common/prom.h"
#include "scaler/ctl/ctl.h"
#include "scaler/controllers/driftmark.h"
#include "scaler/controllers/expiry.h"
#include "scaler/controllers/poolstatus.h"

struct nw_upkeep {
    nw_ctl_deps_t *deps;    /* borrowed */
    nw_driftmark_t *drift;  /* owned (driftmark.h) */
    nw_poolstatus_t *pools; /* owned (poolstatus.h) */
    nw_expiry_t expiry;     /* expiry.h */
    nw_counters_t counters; /* drifted{nodepool,reason}, expired{nodepool} */
};
typedef struct nw_upkeep nw_upkeep_t;

/** New state (NULL on OOM); deps is borrowed and outlives it; registration_timeout_ns is
 * scaler.registrationTimeout (NodePool status). */
nw_upkeep_t *nw_upkeep_new(nw_ctl_deps_t *deps, int64_t registration_timeout_ns);

/** Free. NULL-safe. */
void nw_upkeep_free(nw_upkeep_t *u);

/** A new leadership term: forget per-object memory (counters are kept). */
void nw_upkeep_reset(nw_upkeep_t *u);

/** One pass of every upkeep controller on a snapshot (writes only while leading). */
void nw_upkeep_tick(nw_upkeep_t *u, const nw_kube_snap_t *s);

/** Append nodewarden_nodeclaims_drifted_total{nodepool,reason} and
 * nodewarden_nodeclaims_expired_total{nodepool} (Prometheus text). */
NW_MUST_USE nw_rc_t nw_upkeep_metrics(nw_upkeep_t *u, nw_buf_t *out);

#endif
