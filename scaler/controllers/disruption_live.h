/*
 * scaler/controllers/disruption_live.h — the disruption simulation (disrupt.h nw_dis_sim_fn) on the
 * live cluster through scaler/state/simsnap.h, and the creation of a command's replacements
 * through the provisioner's NodeClaim path.
 *
 * Ownership: a result's handle borrows the kube snapshot of nw_disruption_live_t: create the
 * replacements while that snapshot is held (the controller simulates and acts in one
 * tick). Thread: the reconcile thread.
 */
#ifndef NW_SCALER_CONTROLLERS_DISRUPTION_LIVE_H
#define NW_SCALER_CONTROLLERS_DISRUPTION_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler/ctl/ctl.h"
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/disrupt/disrupt.h"

typedef struct {
    nw_ctl_deps_t *c;
    nw_nodeclaim_t *claims; /* replacements are created through it */
    nw_ctl_shared_t *mem;   /* the simulation's in-flight and nomination memory */
    const nw_kube_snap_t *ks;
    int64_t now;
} nw_disruption_live_t;

/** nw_dis_sim_fn; ud is a nw_disruption_live_t. */
NW_MUST_USE nw_rc_t nw_disruption_live_sim(void *ud, const nw_disrupt_state_t *st,
                                           const char *const *nodeclaims, size_t n,
                                           nw_disrupt_sim_t *out, nw_err_t *err);

/** Was this result made by nw_disruption_live_sim (and still holds its handle)? */
bool nw_disruption_live_owns(const nw_disrupt_sim_t *sim);

/** Create (and launch) replacement k of a live result with its narrowed instance types
 * and capacity types; the name goes to name. rollout_of (NULL: none): the NodeClaim it
 * replaces in a staged accelerator rollout (NW_DIS_ROLLOUT_ANNOTATION). */
NW_MUST_USE nw_rc_t nw_disruption_live_create(const nw_disruption_live_t *l,
                                              const nw_disrupt_sim_t *sim, int k,
                                              const char *rollout_of, char *name, size_t namelen,
                                              nw_err_t *err);

#endif
