/*
 * scaler/controllers/upkeep.c — the upkeep controllers' state, tick order and metrics
 * (see upkeep.h).
 */
#include "scaler/controllers/upkeep.h"

#include <stdlib.h>

nw_upkeep_t *nw_upkeep_new(nw_ctl_deps_t *deps, int64_t registration_timeout_ns)
{
    nw_upkeep_t *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    if (nw_prom_counters_init(&u->counters) != NW_OK) {
        free(u);
        return NULL;
    }
    u->deps = deps;
    u->expiry.deps = deps;
    u->expiry.counters = &u->counters;
    u->drift = nw_driftmark_new(deps, &u->counters);
    u->pools = nw_poolstatus_new(deps, registration_timeout_ns);
    if (!u->drift || !u->pools) {
        nw_upkeep_free(u);
        return NULL;
    }
    return u;
}

void nw_upkeep_free(nw_upkeep_t *u)
{
    if (!u)
        return;
    nw_driftmark_free(u->drift);
    nw_poolstatus_free(u->pools);
    nw_expiry_cleanup(&u->expiry);
    nw_prom_counters_free(&u->counters);
    free(u);
}

void nw_upkeep_reset(nw_upkeep_t *u)
{
    if (!u)
        return;
    nw_expiry_reset(&u->expiry);
    nw_driftmark_reset(u->drift);
    nw_poolstatus_reset(u->pools);
}

void nw_upkeep_tick(nw_upkeep_t *u, const nw_kube_snap_t *s)
{
    if (!u || !nw_ctl_may_write(u->deps))
        return;
    /* expiration first: an expired NodeClaim needs no drift verdict */
    nw_expiry_tick(&u->expiry, s);
    nw_driftmark_tick(u->drift, s);
    nw_poolstatus_tick(u->pools, s);
}

nw_rc_t nw_upkeep_metrics(nw_upkeep_t *u, nw_buf_t *out)
{
    if (!u)
        return NW_OK;
    nw_rc_t rc = nw_prom_counters_write(
        &u->counters, out, "drifted", "nodewarden_nodeclaims_drifted_total",
        "NodeClaims marked Drifted, by NodePool and drift reason.", "nodepool", "reason");
    if (rc == NW_OK)
        rc = nw_prom_counters_write(
            &u->counters, out, "expired", "nodewarden_nodeclaims_expired_total",
            "NodeClaims deleted because they outlived spec.expireAfter.", "nodepool", NULL);
    return rc;
}
