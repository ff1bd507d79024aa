/*
 * scaler/controllers/driftmark.h — the drift-marking controller and the hash
 * annotations (Karpenter's nodeclaim
 * disruption controller and nodepool/nodeclass hash controllers).
 *
 * Each pass (leader only):
 *  1. every NodePool gets karpenter.sh/nodepool-hash = its hash and
 *     karpenter.sh/nodepool-hash-version = v3, every EC2NodeClass
 *     karpenter.k8s.aws/ec2nodeclass-hash(-version) (v5), by a merge patch when they
 *     differ. When a pool's or class's version annotation was not ours yet, its
 *     NodeClaims with another version get ours, and the current hash when they are not
 *     already Drifted (Karpenter's hash-version migration).
 *  2. every launched NodeClaim of an existing NodePool is judged by nw_drift_check
 *     (drift.h) when it is new to us, 5 minutes after its last verdict, or at once
 *     when its NodePool, its EC2NodeClass or itself changed (resourceVersion). The
 *     inputs: the class resolved through the cloud (cached, re-resolved when its
 *     selectors change) and the instance's AMI, subnet and security groups from the
 *     cloud's list of cluster instances (DescribeInstances, cached 5 minutes,
 *     refreshed sooner — at most every 10 s — when an instance is missing).
 *     Drifted: status condition Drifted=True, reason = message = the drift reason,
 *     written through the status subresource; a Normal Event "Drifted" with the
 *     explanation; nodewarden_nodeclaims_drifted_total{nodepool,reason}. Not drifted
 *     any more (or not launched): the condition is removed.
 *
 * Ownership: nw_driftmark_new/_free (held by nw_upkeep_t).
 * Thread: the reconcile thread.
 */
#ifndef NW_SCALER_CONTROLLERS_DRIFTMARK_H
#define NW_SCALER_CONTROLLERS_DRIFTMARK_H

#include "common/prom.h"
#include "scaler/ctl/ctl.h"

typedef struct nw_driftmark nw_driftmark_t;

/** New state; deps and counters (drifted{nodepool,reason}) are borrowed and outlive it.
 * NULL on OOM. */
nw_driftmark_t *nw_driftmark_new(nw_ctl_deps_t *deps, nw_counters_t *counters);
void nw_driftmark_free(nw_driftmark_t *d);

/** Forget every verdict and the instance cache (a new leadership term). */
void nw_driftmark_reset(nw_driftmark_t *d);

/** One pass: hash annotations, then drift marking. */
void nw_driftmark_tick(nw_driftmark_t *d, const nw_kube_snap_t *s);

#endif
