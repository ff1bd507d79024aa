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
 * Thread: the reconcile thread. Objects passed in are borrowed.
 */
#ifndef NW_SCALER_CONTROLLERS_NODECLAIM_H
#define NW_SCALER_CONTROLLERS_NODECLAIM_H

#include <stddef.h>

#include "scaler/controllers/ctl.h"
#include "scaler/state/simsnap.h"

/**
 * Create (and launch) the NodeClaim for simulated claim cl of s; o may be NULL. The
 * created name is written to name (namelen bytes). Fails with NW_EINVAL when the pool is
 * unknown, no instance type is left after the o->itypes filter, or when not leading;
 * kube errors as nw_kube_create returns them. A create that succeeded but whose launch
 * failed still returns NW_OK (the provisioner retries or, on ICE, deletes the NodeClaim).
 */
nw_rc_t nw_claim_create(nw_ctl_t *c, const nw_kube_snap_t *ks, const nw_simsnap_t *s,
                        const nw_sched_claim_t *cl, const nw_simsnap_claim_opts_t *o, char *name,
                        size_t namelen, nw_err_t *err);

/** Launch NodeClaim nc (no providerID yet); fresh = created by this process just now (the
 * lookup of an earlier launch's instance is skipped). After an insufficient-capacity
 * delete, c->next_resolve_mono is reset so pending pods are placed again at once. */
void nw_claim_launch(nw_ctl_t *c, const nw_kube_snap_t *s, const cJSON *nc, int fresh);

#endif
