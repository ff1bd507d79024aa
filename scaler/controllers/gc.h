/*
 * scaler/controllers/gc.h — garbage collection both ways (kubernetes-sigs/karpenter and
 * aws/karpenter-provider-aws pkg/controllers/nodeclaim/garbagecollection/controller.go), a
 * step of the reconcile thread (its listing and plan on a worker of its own: below):
 *
 *  - leaked instances: instances tagged for this cluster (the launcher's tag
 *    filters), not shutting-down, launched more than launchGrace (30 s) ago,
 *    whose providerID matches no NodeClaim, are terminated, and a Node with
 *    that providerID is deleted. Instances whose NodeClaim this process is
 *    still creating or launching (the in-flight memory, scaler/ctl/ctl.h nw_ctl_shared_t: by
 * karpenter.sh/nodeclaim tag or by providerID), or whose karpenter.sh/nodeclaim tag names a
 *    NodeClaim that has no providerID yet, are never collected;
 *  - orphaned NodeClaims: Registered, not being deleted, with a providerID
 *    whose instance is absent from the cloud's list, and whose Node is absent
 *    or not Ready, are deleted (the finalizer does the rest).
 *
 * A pass runs every initialInterval (10 s) for the first 20 successful passes,
 * then every interval (2 min); a pass whose DescribeInstances failed does not
 * count and is retried after initialInterval.
 *
 * A pass is split between two threads so that the reconcile pass never waits for
 * DescribeInstances nor pays for the plan at thousands of instances: the tick that finds a
 * pass due hands the worker (a thread of gc's own, started on the first pass) the tick's
 * snapshot (held) and a copy of the in-flight memory; the worker lists the instances and
 * makes the plan (nw_gc_plan); the next tick after it finished applies the plan on the
 * reconcile thread (terminations, deletions, events), skipping a leak that the in-flight
 * memory or a NodeClaim of the current snapshot claims since, and an orphan whose NodeClaim
 * is gone, being deleted or replaced since. One pass at a time; a pass that finished after
 * the lead was lost is dropped.
 *
 * Ownership: nw_gc_new/nw_gc_free (owned by loop.c; free joins the worker, which may finish
 * a running DescribeInstances first, and releases the snapshot it held).
 * Plans borrow objects from the snapshot they were made from.
 * Thread: nw_gc_tick and nw_gc_wait on the reconcile thread; nw_gc_metrics from any thread;
 * the worker calls only the cloud's list (safe from any thread, cloud.h) and nw_gc_plan.
 */
#ifndef NW_SCALER_CONTROLLERS_GC_H
#define NW_SCALER_CONTROLLERS_GC_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "scaler/ctl/ctl.h"
#include "scaler/kube/cache.h"

typedef struct {
    int64_t initial_interval_ns; /* <= 0: 10 s */
    int64_t interval_ns;         /* <= 0: 2 min */
    int fast_passes;             /* <= 0: 20 */
    int64_t launch_grace_ns;     /* < 0: 30 s (0 allowed) */
} nw_gc_opts_t;

typedef struct nw_gc nw_gc_t;

/** NULL when out of memory. deps and inflight (the in-flight memory; may be NULL) are
 * borrowed and outlive it; o may be NULL (defaults). */
nw_gc_t *nw_gc_new(nw_ctl_deps_t *deps, const nw_inflight_t *inflight, const nw_gc_opts_t *o);
void nw_gc_free(nw_gc_t *g);

/** Apply the pass the worker finished, if any; hand s to the worker when a pass is due
 * (leader only). NULL-safe. */
void nw_gc_tick(nw_gc_t *g, const nw_kube_snap_t *s);

/** Wait until the worker has finished the pass handed over (tests and benchmarks: its
 * plan is applied by the next nw_gc_tick). NULL-safe. */
void nw_gc_wait(nw_gc_t *g);

/** Append nodewarden_gc_* series. NULL-safe. */
NW_MUST_USE nw_rc_t nw_gc_metrics(nw_gc_t *g, nw_buf_t *out);

/* ---- the decision, pure (exposed for tests) ---- */

typedef struct {
    char instance_id[64];
    char provider_id[192];     /* the instance's providerID */
    char nodeclaim[254];       /* its karpenter.sh/nodeclaim tag, "" without one */
    const nw_kube_obj_t *node; /* a Node with that providerID, or NULL */
} nw_gc_leak_t;

typedef struct {
    nw_gc_leak_t *leaked;
    size_t nleaked;
    const nw_kube_obj_t **orphans; /* NodeClaims to delete */
    size_t norphans;
} nw_gc_plan_t;

typedef struct {
    const char *const *names; /* NodeClaims being created/launched (nodeclaim tag values) */
    size_t nnames;
    const char *const *ids; /* instance ids or providerIDs just launched */
    size_t nids;
} nw_gc_inflight_t;

/** Decide a pass: cloud is the list of this cluster's instances (borrowed),
 * inflight may be NULL. out is owned by the caller, free with nw_gc_plan_free. */
NW_MUST_USE nw_rc_t nw_gc_plan(const nw_kube_snap_t *s, const nw_cloud_instances_t *cloud,
                               const nw_gc_inflight_t *inflight, int64_t now_ns,
                               int64_t launch_grace_ns, nw_gc_plan_t *out);
void nw_gc_plan_free(nw_gc_plan_t *p);

#endif
