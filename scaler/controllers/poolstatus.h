/*
 * scaler/controllers/poolstatus.h — NodePool status (kubernetes-sigs/karpenter
 * pkg/apis/v1/nodepool_status.go; Karpenter's nodepool counter, readiness, validation and
 * registrationhealth controllers):
 *
 *   status.resources   cpu, memory, pods, ephemeral-storage and nodes start at 0; the
 *                      capacity of every launched NodeClaim of the pool that is not
 *                      being deleted is added (its Node's status.capacity once
 *                      registered, else the NodeClaim's), and nodes counts them
 *   status.nodes       the same count (`kubectl get nodepools` NODES column)
 *   status.nodeClassObservedGeneration   the referenced EC2NodeClass's generation
 *   conditions         ValidationSucceeded (Karpenter's runtime validation:
 *                      False/NodePoolValidationFailed with the problems),
 *                      NodeClassReady (False NodeClassNotFound / NodeClassTerminating /
 *                      NodeClassReadinessUnknown, False with the class's own Ready
 *                      reason, or True), NodeRegistrationHealthy (below), and Ready =
 *                      ValidationSucceeded and NodeClassReady (False
 *                      "UnhealthyDependents" / Unknown "ReconcilingDependents" with
 *                      "Type=Status, ..." otherwise) — the READY column;
 *                      DisruptionBudgetsValid (nodewarden's own) False/InvalidSchedule
 *                      when a budget's schedule is not a cron expression, True once
 *                      fixed, absent otherwise (not a dependent of Ready)
 *
 * NodeRegistrationHealthy (Karpenter's nodepoolhealth tracker): each pool keeps the
 * outcomes of its last 4 launches (registered = healthy, not registered within the
 * registration timeout = unhealthy). A failure sets the condition False
 * (RegistrationFailed, "Failed to register node") when, counting it, at least half of
 * the 4-slot window failed; a registration sets it True when, counting it, fewer than
 * half failed. It is reset to Unknown (AwaitingReconciliation), with the window
 * emptied, whenever the NodePool's generation or its EC2NodeClass's generation changes;
 * it is absent while the EC2NodeClass does not exist. After a restart the window is
 * refilled from the condition (True: one success; False: two failures).
 *
 * The status is written through the status subresource, only when it changed.
 * Condition lastTransitionTime changes only with the status; observedGeneration is the
 * pool's generation when the condition was last set.
 *
 * Thread: the reconcile thread for the controller; the rest is pure.
 */
#ifndef NW_SCALER_CONTROLLERS_POOLSTATUS_H
#define NW_SCALER_CONTROLLERS_POOLSTATUS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler/ctl/ctl.h"

/* ---- registration health window (pure) ---- */

#define NW_REGHEALTH_WINDOW 4

typedef enum {
    NW_REGHEALTH_UNKNOWN = 0,
    NW_REGHEALTH_HEALTHY,
    NW_REGHEALTH_UNHEALTHY
} nw_reghealth_status_t;

typedef struct {
    unsigned char ok[NW_REGHEALTH_WINDOW]; /* ring of outcomes, oldest overwritten */
    int len, next;
} nw_reghealth_t;

void nw_poolstatus_reghealth_reset(nw_reghealth_t *t);
void nw_poolstatus_reghealth_update(nw_reghealth_t *t, int ok);
/** Unknown when empty; Unhealthy when failures / window >= 1/2; else Healthy. */
nw_reghealth_status_t nw_poolstatus_reghealth_status(const nw_reghealth_t *t);
/** The status the window would have after one more outcome (Karpenter's DryRun). */
nw_reghealth_status_t nw_poolstatus_reghealth_dry_run(const nw_reghealth_t *t, int ok);
/** Refill to a status: Unknown empties, Healthy = one success, Unhealthy = two failures. */
void nw_poolstatus_reghealth_set(nw_reghealth_t *t, nw_reghealth_status_t s);

/* ---- the status of one pool (pure) ---- */

typedef struct {
    const cJSON *nodepool;           /* required */
    const cJSON *nodeclass;          /* the referenced EC2NodeClass, NULL if absent */
    const cJSON *const *claims;      /* the pool's NodeClaims */
    const cJSON *const *claim_nodes; /* per claim its Node or NULL (may be NULL itself) */
    size_t nclaims;
    const char *validation_error; /* NULL: runtime validation passed */
    nw_reghealth_t *tracker;      /* in/out */
    const int *reg_events;        /* outcomes since the last pass: 1 registered, 0 failed */
    size_t nreg_events;
    int64_t now_ns;
} nw_poolstatus_in_t;

/** The pool's new status object (owned; NULL on OOM), starting from its current
 * status (transition times kept). Updates in->tracker. */
cJSON *nw_poolstatus_compute(const nw_poolstatus_in_t *in);

/** Karpenter's runtime validation of a NodePool (layer D: requirement keys, operators
 * and values, restricted and well-known labels). Returns true when valid; otherwise false and
 * the problems, "; "-joined, in msg (n bytes). */
bool nw_poolstatus_validate(const cJSON *nodepool, char *msg, size_t n);

/* ---- the controller ---- */

typedef struct nw_poolstatus nw_poolstatus_t;

/** New state (NULL on OOM); deps is borrowed and outlives it; registration_timeout_ns is
 * scaler.registrationTimeout (a launch older than it without a Node counts as failed). */
nw_poolstatus_t *nw_poolstatus_new(nw_ctl_deps_t *deps, int64_t registration_timeout_ns);
void nw_poolstatus_free(nw_poolstatus_t *p);
/** A new leadership term: windows are refilled from the conditions, registrations
 * seen from now on count. */
void nw_poolstatus_reset(nw_poolstatus_t *p);

/** Observe registrations and registration timeouts, then write every NodePool's status
 * that changed. */
void nw_poolstatus_tick(nw_poolstatus_t *p, const nw_kube_snap_t *s);

#endif
