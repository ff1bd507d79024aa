/*
 * scaler/controllers/lifecycle.h — NodeClaim registration and initialization
 * (karpenter.sh/v1 NodeClaim conditions Registered, Initialized, Ready), the
 * registration timeout (scaler.registrationTimeout: a NodeClaim whose Node never
 * registered is deleted), and the EC2NodeClass status (resolved subnets, security
 * groups, AMIs; condition Ready). The termination finalizers live in
 * scaler/controllers/termination.h.
 *
 * State: nw_ctl_t.next_nodeclass_mono, the registration counters.
 * Thread: the reconcile thread.
 */
#ifndef NW_SCALER_CONTROLLERS_LIFECYCLE_H
#define NW_SCALER_CONTROLLERS_LIFECYCLE_H

#include "scaler/controllers/ctl.h"

/** One lifecycle pass on a snapshot (writes only while leading). */
void nw_life_tick(nw_ctl_t *c, const nw_kube_snap_t *s);

#endif
