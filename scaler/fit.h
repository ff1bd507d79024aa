/*
 * scaler/fit.h — a MINIMAL FIRST-FIT placement used by the provisioner while the
 * full scheduling simulation (scaler/schedule/, nw_sched_solve) is not on main.
 * It is deliberately small and says so in logs and the README:
 *
 *   - pending pods sorted largest first (cpu, then memory);
 *   - each pod goes to the first existing bin (a Node, or an in-flight NodeClaim
 *     with its expected allocatable) whose labels satisfy the pod's nodeSelector
 *     and first required node-affinity term, whose NoSchedule/NoExecute taints it
 *     tolerates and which has room;
 *   - else to the first NodeClaim opened in this run whose pool and narrowed
 *     requirements accept it and that keeps at least one instance type able to
 *     hold all its pods;
 *   - else a new NodeClaim on the first NodePool (weight descending, then name)
 *     whose requirements are compatible and whose taints are tolerated, with the
 *     instance types that fit the pod, match the requirements, stay within the
 *     pool's remaining limits and are not exotic (GPU/accelerator/metal) unless
 *     the pod asks for an accelerator;
 *   - a NodeClaim's types are sorted by their cheapest available offering (zone
 *     and capacity type allowed by the requirements); the first is the choice;
 *   - a pod that fits nowhere gets one reason per pool.
 * No topology spread, pod (anti-)affinity, preferred affinity or DaemonSet overhead.
 *
 * The interface is JSON so that callers need neither api/ nor scaler/aws/ types
 * (their names clash). Input (all borrowed):
 *   {"pools":[NodePool...], "pending":[Pod...],
 *    "itypes":[{"name","labels":{},"capacity":{},"allocatable":{},"exotic":bool,
 *               "offerings":[{"zone","capacityType","price","available"}]}],
 *    "bins":[{"name","labels":{},"taints":[],"allocatable":{},"pods":[Pod...]}],
 *    "poolCapacity":[{"pool","capacity":{}}]}
 * Output (owned by the caller):
 *   {"claims":[{"pool","types":[...],"zone","capacityType","price",
 *               "requirements":[{key,operator,values}],"requests":{},"pods":[i...]}],
 *    "placed":[{"pod":i,"bin":name}],
 *    "unschedulable":[{"pod":i,"reasons":{pool: message} | "reason": message}]}
 * where i indexes "pending".
 * Thread: any; pure (no I/O, no clock).
 */
#ifndef NW_SCALER_FIT_H
#define NW_SCALER_FIT_H

#include <cjson/cJSON.h>

#include "common/err.h"

/** Run the first-fit placement. @return NW_OK and *out, or NW_EINVAL naming the field. */
nw_rc_t nw_fit_solve(const cJSON *in, cJSON **out, nw_err_t *err);

/** A pod's effective requests as {name: quantity} (containers summed, max with each
 * init container, plus pods: 1). Owned by the caller; NULL on a bad quantity. */
cJSON *nw_fit_pod_requests(const cJSON *pod, nw_err_t *err);

/** Sum two resource maps (a + b) into a new map; NULL on error. */
cJSON *nw_fit_res_add(const cJSON *a, const cJSON *b);

#endif
