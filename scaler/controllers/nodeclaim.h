/*
 * scaler/controllers/nodeclaim.h — creating and launching NodeClaims: the one path the
 * provisioner and disruption (replacements) both use.
 *
 *   nw_claim_create   the NodeClaim for a simulated claim (nw_simsnap_claim_body), stamped
 *                     with the drift hashes, created through the API, remembered in the
 *                     in-flight memory (scaler/state/inflight.h), its pods nominated
 *                     (scaler/state/nominations.h) with a Nominated event each, then
 *                     launched at once.
 *   nw_claim_launch   launch a NodeClaim without a providerID through the cloud (once: an
 *                     instance already tagged karpenter.sh/nodeclaim=<name> is adopted), record
 *                     the launch in its labels and status (Launched=True); on insufficient
 *                     capacity delete it so the next batch places its pods elsewhere.
 *
 * State: nw_claims_t, the counters (created, launched, failed launches, deletes on
 * insufficient capacity); the in-flight and nomination memory it writes is the shared
 * memory it was built with (ctl.h nw_ctl_shared_t), read by provisioning and disruption.
 *
 * Ownership: nw_claims_new / nw_claims_free (loop.c; provisioning and disruption borrow it).
 * Thread: the reconcile thread, except nw_claims_metrics (any thread; atomics). Objects
 * passed in are borrowed.
 */
#ifndef NW_SCALER_CONTROLLERS_NODECLAIM_H
#define NW_SCALER_CONTROLLERS_NODECLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "scaler/controllers/ctl.h"
#include "scaler/state/simsnap.h"

typedef struct nw_claims nw_claims_t;

/** New (NULL on OOM); deps and mem are borrowed and outlive it. */
nw_claims_t *nw_claims_new(nw_ctl_deps_t *deps, nw_ctl_shared_t *mem);
void nw_claims_free(nw_claims_t *k);

/** How many NodeClaims a launch deleted on insufficient capacity so far (provisioning
 * places the pending pods again at once when this changes). */
uint64_t nw_claims_ice_deletes(nw_claims_t *k);

/** Append nodewarden_nodeclaims_{created,launched,launch_failed}_total. */
nw_rc_t nw_claims_metrics(nw_claims_t *k, nw_buf_t *out);

/**
 * Create (and launch) the NodeClaim for simulated claim cl of s; o may be NULL. The
 * created name is written to name (namelen bytes). Fails with NW_EINVAL when the pool is
 * unknown, no instance type is left after the o->itypes filter, or when not leading;
 * kube errors as nw_kube_create returns them. A create that succeeded but whose launch
 * failed still returns NW_OK (the provisioner retries or, on ICE, deletes the NodeClaim).
 */
nw_rc_t nw_claim_create(nw_claims_t *k, const nw_kube_snap_t *ks, const nw_simsnap_t *s,
                        const nw_sched_claim_t *cl, const nw_simsnap_claim_opts_t *o, char *name,
                        size_t namelen, nw_err_t *err);

/** Launch NodeClaim nc (no providerID yet); fresh = created by this process just now (the
 * lookup of an earlier launch's instance is skipped). An insufficient-capacity launch
 * deletes the NodeClaim and counts in nw_claims_ice_deletes. */
void nw_claim_launch(nw_claims_t *k, const nw_kube_snap_t *s, const cJSON *nc, int fresh);

#endif
