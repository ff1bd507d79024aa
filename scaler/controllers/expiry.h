/*
 * scaler/controllers/expiry.h — expiration (kubernetes-sigs/karpenter
 * pkg/controllers/nodeclaim/expiration/controller.go): a NodeClaim is deleted as soon as
 * now >= metadata.creationTimestamp + spec.expireAfter. expireAfter is a Go duration
 * (the NodePool's template value, 720h by default, copied onto the NodeClaim at
 * creation); "Never" disables expiration. Budgets do not apply: deleting the
 * NodeClaim is the whole action, and the termination finalizer drains the node
 * (respecting PDBs and do-not-disrupt until a terminationGracePeriod, if any, runs out).
 * Each expiry is logged, counted (nodewarden_nodeclaims_expired_total{nodepool}) and
 * recorded as an Event with reason "Expired" on the NodeClaim.
 *
 * Staged replacement (issue 33): a NodeClaim whose accelerator class (its label of the GPU
 * policy's node label key) stages its rollouts (disruption.rollout.maxReplacing > 0) is not
 * deleted here: the disruption controller replaces it, one step of its pool's staged
 * rollout (docs/scaler.md, "Staged replacement of accelerator nodes").
 *
 * Thread: the reconcile thread (nw_expiry_tick); nw_expiry_deadline is pure.
 */
#ifndef NW_SCALER_CONTROLLERS_EXPIRY_H
#define NW_SCALER_CONTROLLERS_EXPIRY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/prom.h"
#include "scaler/ctl/ctl.h"
#include "scaler/controllers/tickgate.h"

/**
 * When does this NodeClaim expire. Returns 1 and sets *at_ns (epoch ns) when it has an
 * expiry, 0 when it never expires (expireAfter "Never"), and -1 with err set when
 * creationTimestamp or expireAfter is missing or malformed (path names the field).
 * A missing spec.expireAfter means the CRD default, 720h.
 */
int nw_expiry_deadline(const cJSON *nodeclaim, int64_t *at_ns, nw_err_t *err);

/** The same from the NodeClaim's record (what the tick reads: scaler/kube/cache.h). */
int nw_expiry_deadline_of(const nw_node_claim_t *nodeclaim, int64_t *at_ns, nw_err_t *err);

/** Is the NodeClaim due at now_ns (true), not yet or never (false). Malformed: false. */
bool nw_expiry_due(const cJSON *nodeclaim, int64_t now_ns);

#define NW_EXPIRY_RECENT 32

/* The controller: its dependencies, uids deleted a moment ago (a lagging snapshot may still
 * show them alive), where to count expirations, and its tick gate (tickgate.h: each
 * NodeClaim's expiry is read once per version of it; a tick without a NodeClaim change
 * returns at once until the earliest expiry comes). Caller storage; zero it, then set deps;
 * nw_expiry_cleanup frees what it holds. */
typedef struct {
    nw_ctl_deps_t *deps;               /* borrowed */
    char recent[NW_EXPIRY_RECENT][64]; /* ring */
    unsigned n;
    nw_counters_t *counters; /* borrowed; expired{nodepool}; NULL: not counted */
    nw_tickgate_t gate;      /* set up by the first tick */
    /* the GPU policy (borrowed, NULL: none): NodeClaims of its classes that stage their
     * rollouts are left to disruption */
    const struct nw_gpu_policy *gpu;
} nw_expiry_t;

/** Does the GPU policy gpu (NULL: none) stage the rollouts of this NodeClaim's class (its
 * label of the policy's node label key). */
bool nw_expiry_staged(const struct nw_gpu_policy *gpu, const nw_node_claim_t *nodeclaim);

/** Delete every NodeClaim (not already being deleted) that is due. */
void nw_expiry_tick(nw_expiry_t *e, const nw_kube_snap_t *s);

/** A new leadership term: the next tick looks at every NodeClaim again. */
void nw_expiry_reset(nw_expiry_t *e);

/** Free what the controller holds (its gate's snapshot and memo). */
void nw_expiry_cleanup(nw_expiry_t *e);

#endif
