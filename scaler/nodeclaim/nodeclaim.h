/*
 * scaler/nodeclaim/nodeclaim.h — creating and launching NodeClaims: the one path the
 * provisioner and disruption (replacements) both use.
 *
 *   nw_nodeclaim_create   the NodeClaim for a simulated claim (nw_simsnap_claim_body), stamped
 *                     with the drift hashes, created through the API, remembered in the
 *                     in-flight memory (scaler/state/inflight.h), its pods nominated
 *                     (scaler/state/nominations.h) with a Nominated event each, then
 *                     launched at once.
 *   nw_nodeclaim_launch   launch a NodeClaim without a providerID through the cloud (once: an
 *                     instance already tagged karpenter.sh/nodeclaim=<name> is adopted), record
 *                     the launch in its labels and status (Launched=True); on insufficient
 *                     capacity delete it so the next batch places its pods elsewhere.
 *
 * Launches in parallel (kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go
 * CreateNodeClaims launches a batch's NodeClaims concurrently): with opts.workers > 0,
 * nw_nodeclaim_launch only queues the launch (the tag lookup of an earlier launch, then
 * cloud->ops->launch, then the NodeClaim's labels and status: the Kubernetes client is
 * thread-safe) for a pool of that many worker threads and returns; the rest of a worker's
 * result waits until nw_nodeclaim_collect (the provisioner calls it first thing each tick)
 * writes it back on the reconcile thread: the in-flight memory, Events, the delete on
 * insufficient capacity. So a slow CreateFleet holds one worker, never
 * the reconcile thread: provisioning, lifecycle, gc, termination and disruption keep
 * ticking. While a launch is queued or running, its in-flight record says so
 * (launching: kept, counted by the simulation and gc) and the NodeClaim is not queued
 * again. opts.workers == 0 runs the same steps on the calling thread at once.
 *
 * A NodeClaim whose EC2NodeClass asks for nodewarden's kubeadm bootstrap gets its token
 * Secret (scaler/nodeclaim/bootstrap.h) on the worker just before its launch; the launch
 * fails (and is retried) when the Secret cannot be made.
 *
 * Every launch carries a client token (scaler/cloud/cloud.h): "nw-<NodeClaim uid>-<n>", n
 * (the in-flight record's token_gen) moving on only when the cloud answered that the token
 * launched nothing, so a retry after a timeout, or a restart, never makes a second instance.
 *
 * State: nw_nodeclaim_t, the counters (created, launched, failed launches, adopted, deletes on
 * insufficient capacity), the queue of launches and the workers; the in-flight and
 * nomination memory it writes is the shared memory it was built with (scaler/ctl/ctl.h
 * nw_ctl_shared_t), read by provisioning and disruption.
 *
 * Ownership: nw_nodeclaim_new / nw_nodeclaim_free (loop.c; provisioning and disruption borrow it;
 * free stops the workers, waiting for the cloud calls they are in: loop.c makes those
 * end promptly at shutdown). Objects passed in are borrowed; a queued launch works on
 * copies.
 * Thread: the reconcile thread, except nw_nodeclaim_metrics, nw_nodeclaim_in_flight and
 * nw_nodeclaim_wait_idle (any thread) and opts.wake (called on a worker).
 */
#ifndef NW_SCALER_NODECLAIM_NODECLAIM_H
#define NW_SCALER_NODECLAIM_NODECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "scaler/ctl/ctl.h"
#include "scaler/state/simsnap.h"

typedef struct nw_nodeclaim nw_nodeclaim_t;

typedef struct {
    int workers;            /* launch worker threads (settings.launchConcurrency); 0: none */
    void (*wake)(void *ud); /* nullable: a launch finished (called on its worker) */
    void *wake_ud;
    int64_t bootstrap_ttl_ns; /* a kubeadm bootstrap token's lifetime (registration timeout) */
} nw_nodeclaim_opts_t;

/** New (NULL on OOM or when a worker cannot start); deps and mem are borrowed and outlive
 * it; o may be NULL (no workers). */
nw_nodeclaim_t *nw_nodeclaim_new(nw_ctl_deps_t *deps, nw_ctl_shared_t *mem,
                                 const nw_nodeclaim_opts_t *o);
void nw_nodeclaim_free(nw_nodeclaim_t *k);

/** Write back the launches the workers finished (see above). The reconcile thread. */
void nw_nodeclaim_collect(nw_nodeclaim_t *k);

/** Launches queued or running. */
int nw_nodeclaim_in_flight(nw_nodeclaim_t *k);

/** Wait (real time, at most timeout_ms) until no launch is queued or running; true when so.
 * For tests and benchmarks. */
bool nw_nodeclaim_wait_idle(nw_nodeclaim_t *k, int64_t timeout_ms);

/** How many NodeClaims a launch deleted on insufficient capacity so far (provisioning
 * places the pending pods again at once when this changes). */
uint64_t nw_nodeclaim_ice_deletes(nw_nodeclaim_t *k);

/** Append nodewarden_nodeclaims_{created,launched,launch_failed,adopted}_total and the
 * nodewarden_nodeclaims_launches_in_flight gauge. */
NW_MUST_USE nw_rc_t nw_nodeclaim_metrics(nw_nodeclaim_t *k, nw_buf_t *out);

/**
 * Create (and launch) the NodeClaim for simulated claim cl of s; o may be NULL. The
 * created name is written to name (namelen bytes). Fails with NW_EINVAL when the pool is
 * unknown, no instance type is left after the o->itypes filter, or when not leading;
 * kube errors as nw_kube_write_create returns them. A create that succeeded but whose launch
 * failed still returns NW_OK (the provisioner retries or, on ICE, deletes the NodeClaim).
 */
NW_MUST_USE nw_rc_t nw_nodeclaim_create(nw_nodeclaim_t *k, const nw_kube_snap_t *ks,
                                        const nw_simsnap_t *s, const nw_sched_claim_t *cl,
                                        const nw_simsnap_claim_opts_t *o, char *name,
                                        size_t namelen, nw_err_t *err);

/**
 * Create (and launch) the NodeClaims for the n simulated claims of s, as nw_nodeclaim_create
 * does one: the bodies are built and the creates' results written back (memory,
 * nominations, Events, the launch) in order on this thread, the create calls themselves
 * run on up to opts.workers short-lived threads at once (Karpenter's CreateNodeClaims runs
 * a batch's creates with workqueue.ParallelizeUntil) and this thread waits for them; with
 * no workers, one after another. A claim that cannot be created is logged. Returns how
 * many were created.
 */
int nw_nodeclaim_create_batch(nw_nodeclaim_t *k, const nw_kube_snap_t *ks, const nw_simsnap_t *s,
                              const nw_sched_claim_t *claims, int n,
                              const nw_simsnap_claim_opts_t *o);

/** Launch NodeClaim nc (no providerID yet); fresh = created by this process just now (the
 * lookup of an earlier launch's instance is skipped). With workers the launch is queued
 * and its outcome written by a later nw_nodeclaim_collect. An insufficient-capacity launch
 * deletes the NodeClaim and counts in nw_nodeclaim_ice_deletes. */
void nw_nodeclaim_launch(nw_nodeclaim_t *k, const nw_kube_snap_t *s, const cJSON *nc, int fresh);

/** The same for a NodeClaim of the cache (its record only: the cache keeps no NodeClaim
 * JSON): when a launch is to be tried (none queued, running or tried within the retry
 * interval), the NodeClaim is read from the API server first, and left alone when that
 * copy has a providerID or a deletionTimestamp. */
void nw_nodeclaim_launch_cached(nw_nodeclaim_t *k, const nw_kube_snap_t *s,
                                const nw_kube_obj_t *nc);

/** The labels a launched NodeClaim gets besides instance type, zone and capacity type: the
 * type's well-known single-valued labels (scaler/cloud/catalog.h nw_catalog_itype_labels), the
 * zone id (zone_id; none when NULL/"") and the region. Any thread (it reads the catalog's
 * types and region only, which never change after start). Returns the count (<= max; 0
 * for a type the catalog does not know). */
int nw_nodeclaim_launch_labels(nw_ctl_deps_t *c, const char *type, const char *zone,
                               const char *zone_id, nw_cat_label_t *out, int max);

#endif
