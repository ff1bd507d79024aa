/*
 * scaler/state/inflight.h — memory of the NodeClaims this process created or
 * launched, kept until the watch cache shows them (the cache lags a create by a
 * moment; without this memory the next batch would not count the new capacity and
 * would launch it twice, and a launch whose status write failed would be repeated).
 *
 * Read by the cluster-input builder (scaler/state/simsnap.h: claims created but not
 * yet cached count as in-flight capacity) and garbage collection (an instance we just
 * launched is not leaked); written by the NodeClaim create/launch path
 * (scaler/nodeclaim/nodeclaim.h) and expired by the provisioner.
 *
 * Ownership: nw_inflight_t owns its records; records hold owned cJSON copies.
 * Thread: the reconcile thread only (the launch workers of nodeclaim.h never touch it: a
 * launch's outcome is written here when the reconcile thread collects it).
 */
#ifndef NW_SCALER_STATE_INFLIGHT_H
#define NW_SCALER_STATE_INFLIGHT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "scaler/kube/cache.h"

typedef struct nw_inflight_claim {
    char name[256];
    cJSON *obj;           /* the created object (owned), used while the cache lags (dropped
                             once the cache shows it: nw_inflight_expire) */
    int64_t created_mono; /* ns */
    int launched;         /* we launched it (provider_id valid) */
    char provider_id[192];
    cJSON *status;            /* what the launch chose (owned): type, zone, ct, image; or NULL */
    int64_t next_try_mono;    /* after a failed launch */
    int seen_in_cache;        /* the cache has shown it at least once */
    int deleted;              /* we deleted it (ICE): no longer capacity */
    int launching;            /* a launch of it is queued or running (nodeclaim.h) */
    int launch_tried;         /* a launch of it was tried: kept until it has a providerID */
    unsigned token_gen;       /* the launch's client token generation (nodeclaim.c) */
    int64_t boot_minted_mono; /* its kubeadm token Secret was created then (0: not yet) */
    int class_unready;        /* not launched: its EC2NodeClass is not ready (said once) */
    struct nw_inflight_claim *next;
} nw_inflight_claim_t;

typedef struct {
    nw_inflight_claim_t *head;
} nw_inflight_t;

/** The record of NodeClaim `name`, or NULL. */
nw_inflight_claim_t *nw_inflight_find(const nw_inflight_t *f, const char *name);

/** Find or add the record of `name` (created at mono); NULL on OOM. */
nw_inflight_claim_t *nw_inflight_remember(nw_inflight_t *f, const char *name, int64_t mono);

/** Forget records the cache shows settled (created, no launch of ours running, and with a
 * providerID when we launched it or tried to) or that are gone for good; a record lives at
 * least 2 s, and one the cache never showed is kept for up to 120 s. */
void nw_inflight_expire(nw_inflight_t *f, const nw_kube_snap_t *s, int64_t mono);

/** Forget everything. */
void nw_inflight_clear(nw_inflight_t *f);

#endif
