/*
 * scaler/controllers/lifecycle.h — NodeClaim registration and initialization
 * (karpenter.sh/v1 NodeClaim conditions Registered, Initialized, Ready), the
 * registration timeout (scaler.registrationTimeout: a NodeClaim whose Node never
 * registered is deleted), and the EC2NodeClass status (resolved subnets, security
 * groups, AMIs; condition Ready). The termination finalizers live in
 * scaler/controllers/termination.h.
 *
 * The writes that register and initialize a NodeClaim (two read-modify-writes each: the
 * Node, then the NodeClaim's condition) run on up to 8 threads of this module's own, one job
 * per NodeClaim at a time, so that a scale-out's nodes are registered together rather than
 * one after another on the reconcile thread; the tick decides, and the next tick posts the
 * Events and counts what the jobs did.
 *
 * State: nw_lifecycle_t — the next EC2NodeClass refresh, the registration counters, the jobs.
 * Ownership: nw_lifecycle_new / nw_lifecycle_free (loop.c; free stops the threads: queued
 * jobs dropped, running ones finish). Thread: the reconcile thread, except
 * nw_lifecycle_metrics (any thread; atomics); the jobs' threads start with the first job.
 */
#ifndef NW_SCALER_CONTROLLERS_LIFECYCLE_H
#define NW_SCALER_CONTROLLERS_LIFECYCLE_H

#include <stdint.h>

#include "common/buf.h"
#include "scaler/controllers/cohort.h"
#include "scaler/controllers/nominate.h"
#include "scaler/ctl/ctl.h"

typedef struct {
    int64_t registration_timeout_ns; /* scaler.registrationTimeout */
    int64_t nodeclass_every_ns;      /* every EC2NodeClass resolved and its status refreshed this
                                      * often, at most every 30 s (<= 0 or longer: 30 s; tests
                                      * shorten it: scaler.testing.nodeClassRefreshInterval) */
    /* the provisioner's writer of pods' status.nominatedNodeName (borrowed, may be NULL): a
     * Node is registered (its karpenter.sh/unregistered taint lifted, so pods may bind
     * there) only once no nomination to it is still being written, so that the pods
     * planned for it are nominated there before any pod can bind */
    nw_nominate_t *nominate;
    /* the provisioner's cohorts (borrowed, may be NULL): a NodeClaim of a cohort is
     * registered only once the other members' Nodes exist (cohort.h) */
    nw_cohorts_t *cohorts;
} nw_lifecycle_opts_t;

typedef struct nw_lifecycle nw_lifecycle_t;

/** New (NULL on OOM); deps is borrowed and outlives it. */
nw_lifecycle_t *nw_lifecycle_new(nw_ctl_deps_t *deps, const nw_lifecycle_opts_t *o);
void nw_lifecycle_free(nw_lifecycle_t *l);

/** A new leadership term: refresh every EC2NodeClass status on the next tick. */
void nw_lifecycle_reset(nw_lifecycle_t *l);

/** One lifecycle pass on a snapshot (writes only while leading). */
void nw_lifecycle_tick(nw_lifecycle_t *l, const nw_kube_snap_t *s);

/** Wait until every submitted registration or initialization job has finished (tests; what
 * follows them waits for the next tick). */
void nw_lifecycle_wait(nw_lifecycle_t *l);

/** Append nodewarden_nodeclaims_{registered,initialized,registration_timeouts}_total. */
NW_MUST_USE nw_rc_t nw_lifecycle_metrics(nw_lifecycle_t *l, nw_buf_t *out);

#endif
